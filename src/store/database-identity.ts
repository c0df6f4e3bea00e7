import type Database from 'better-sqlite3';
import { StoreError } from '../core/index.ts';

/**
 * SQLite's `application_id` of an indexbot database ("IXBT"), set when the schema is made or
 * migrated: a database of another program is told apart by it rather than by
 * `user_version`, which many programs set.
 */
export const APPLICATION_ID = 0x49584254;

/** Tables of every schema version, from the first: a database made before the application id had them all. */
const TABLES_OF_EVERY_VERSION = ['indexes', 'snapshots', 'events', 'cursors', 'token_ids'];

/**
 * The schema version of the indexbot database in `db`, 0 for a file with nothing in it yet,
 * read before anything is written to it (trial 36: `run` added 24 tables to another
 * program's database, switched it to WAL, and `doctor` said PASS). Throws, naming the
 * file, for a database of another program or an indexbot database without its version.
 */
export function indexbotSchemaVersion(path: string, db: Database.Database): number {
  const version = db.pragma('user_version', { simple: true }) as number;
  const applicationId = db.pragma('application_id', { simple: true }) as number;
  if (applicationId === APPLICATION_ID) return version;
  const notOurs = (what: string) =>
    new StoreError(`${path} is another program's SQLite database (${what}), not an indexbot database; it was left as it is: pass --db an indexbot database or a new file`, 'STORE_FOREIGN');
  if (applicationId !== 0) throw notOurs(`application_id ${applicationId}`);
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name").pluck().all() as string[];
  if (tables.length === 0 && version === 0) return 0;
  if (!TABLES_OF_EVERY_VERSION.every((t) => tables.includes(t))) {
    const names = tables.length === 0 ? 'no tables' : `tables ${tables.slice(0, 4).join(', ')}${tables.length > 4 ? ` and ${tables.length - 4} more` : ''}`;
    throw notOurs(`${names}${version === 0 ? '' : `, user_version ${version}`}`);
  }
  if (version === 0) {
    // sqlite3's .dump writes the tables and rows but not PRAGMA user_version (nor application_id).
    throw new StoreError(
      `${path} holds indexbot's tables but no schema version, as a copy made with sqlite3's .dump does; it was left as it is: copy a database with sqlite3's .backup or VACUUM INTO instead, or set the version of the database it was dumped from (\`sqlite3 ${path} 'PRAGMA user_version = N'\`)`,
      'STORE_UNAVAILABLE',
    );
  }
  return version;
}
