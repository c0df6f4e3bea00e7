import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The package's own files: two levels above this module both in a checkout (src/cli/) and
 * in an installed package (dist/cli/).
 */
export const PACKAGE_ROOT = new URL('../../', import.meta.url);

/** The example strategies the package ships (rebalance-front-run, drift-reversion, rebalance-alert). */
export const EXAMPLE_STRATEGIES = fileURLToPath(new URL('strategies/', PACKAGE_ROOT));

export interface PackageJson {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies?: Record<string, string>;
}

export function packageJson(): PackageJson {
  return JSON.parse(readFileSync(new URL('package.json', PACKAGE_ROOT), 'utf8')) as PackageJson;
}
