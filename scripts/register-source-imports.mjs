// `node --import ./scripts/register-source-imports.mjs`: tsx for TypeScript, and `indexbot` imports to src/ (see source-imports.mjs).
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

registerTsx();
register(new URL('./source-imports.mjs', import.meta.url));
