export { WalletKeypair } from './keypair.ts';
export { WalletSession, type WalletSessionOptions, type AuthEndpoints } from './wallet-session.ts';
export { type TokenStore, type StoredTokens, MemoryTokenStore, FileTokenStore } from './token-store.ts';
export { isJwt, readJwtClaims, type JwtClaims } from './jwt.ts';
