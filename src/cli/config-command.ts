import type { Command } from 'commander';
import { z } from 'zod';
import { configFileSchema } from '../config/index.ts';

/** The config file's JSON Schema, from the same zod schema that checks it. */
export function configJsonSchema(): object {
  return z.toJSONSchema(configFileSchema, { io: 'input', unrepresentable: 'any' });
}

export function registerConfigCommand(program: Command): void {
  const cmd = program.command('config').description('the config file');
  cmd
    .command('schema')
    .description('print the JSON Schema of config/indexbot.json (editors complete and check keys from it)')
    .action(() => {
      process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    });
}
