/**
 * The wallet sign-in message of the contract (Sign-In-With-Solana style). The server
 * renders it; the client checks that what it is asked to sign is exactly this text for its
 * own wallet, base URL and nonce, with only the two timestamps left to the server.
 */
export interface SigninMessageFields {
  /** Host and port of the base URL, e.g. `127.0.0.1:7420`. */
  host: string;
  wallet: string;
  baseUrl: string;
  nonce: string;
  issuedAt: string;
  expiresAt: string;
}

export function renderSigninMessage(f: SigninMessageFields): string {
  return [
    `${f.host} wants you to sign in with your Solana account:`,
    f.wallet,
    '',
    'Sign in to the Index Fund Data Service.',
    '',
    `URI: ${f.baseUrl}`,
    'Version: 1',
    `Nonce: ${f.nonce}`,
    `Issued At: ${f.issuedAt}`,
    `Expiration Time: ${f.expiresAt}`,
  ].join('\n');
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/**
 * Returns why `message` is not the sign-in message for these fields, or undefined when it
 * is. Only `Issued At` and `Expiration Time` may be anything, and they must be ISO UTC.
 */
export function signinMessageMismatch(message: string, expected: Omit<SigninMessageFields, 'issuedAt' | 'expiresAt'>): string | undefined {
  const issued = /\nIssued At: ([^\n]*)\n/.exec(message)?.[1];
  const expires = /\nExpiration Time: ([^\n]*)$/.exec(message)?.[1];
  if (issued === undefined || expires === undefined) return 'timestamps missing';
  if (!ISO.test(issued) || !ISO.test(expires)) return 'timestamps are not ISO 8601 UTC';
  if (Date.parse(expires) <= Date.parse(issued)) return 'expires before it is issued';
  const wanted = renderSigninMessage({ ...expected, issuedAt: issued, expiresAt: expires });
  if (message === wanted) return undefined;
  const got = message.split('\n');
  const want = wanted.split('\n');
  const line = want.findIndex((l, i) => got[i] !== l);
  const labels = ['host', 'wallet', 'blank line', 'statement', 'blank line', 'URI', 'version', 'nonce'];
  return line >= 0 ? `unexpected ${labels[line] ?? 'content'} (line ${line + 1})` : 'unexpected trailing content';
}
