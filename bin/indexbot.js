#!/usr/bin/env node
// Strategies and the CLI are TypeScript loaded without a build step: tsx's loader
// is registered before anything else is imported.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
