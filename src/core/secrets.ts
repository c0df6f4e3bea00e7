/** Names of environment variables whose values are credentials: API keys, tokens, keypairs, passwords. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSPHRASE|CREDENTIAL/i;
/** Named like a credential, but a file's path: the error about that file must name it (trial 25 read "keypair file [REDACTED]"). */
const PATH_NAMES = new Set(['INDEXBOT_WALLET_KEYPAIR']);
/** Shorter values are left alone: they would blank out ordinary words. */
const MIN_SECRET_LENGTH = 8;

/**
 * The credentials this process was given in its environment (longest first), and the
 * passwords in its `INDEXBOT_*_URL`s: what an error line or a log line must never repeat,
 * whoever wrote the text (a strategy's own error message may quote a key it read).
 */
export function secretValues(env: NodeJS.ProcessEnv = process.env): string[] {
  const found = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value.length < MIN_SECRET_LENGTH) continue;
    if (SECRET_NAME.test(name) && !PATH_NAMES.has(name)) found.add(value);
    if (/^INDEXBOT_\w*URL$/.test(name) && URL.canParse(value)) {
      const password = decodeURIComponent(new URL(value).password);
      if (password.length >= MIN_SECRET_LENGTH) found.add(password);
    }
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/** `text` with each of `secrets` replaced by `[REDACTED]`. */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join('[REDACTED]');
  return out;
}
