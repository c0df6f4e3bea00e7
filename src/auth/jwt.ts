/**
 * Reads claims from a JWT without verifying it. The client only needs `exp` and `sub` to
 * schedule refreshes and pick a rate gate; the server verifies every token it receives.
 */
export interface JwtClaims {
  sub?: string;
  wallet?: string;
  permissions?: string[];
  iat?: number;
  exp?: number;
}

export function isJwt(credential: string): boolean {
  return credential.split('.').length === 3;
}

export function readJwtClaims(token: string): JwtClaims | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown;
    return claims && typeof claims === 'object' ? (claims as JwtClaims) : undefined;
  } catch {
    return undefined;
  }
}
