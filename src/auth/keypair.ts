import { readFileSync } from 'node:fs';
import bs58 from 'bs58';
import nacl from 'tweetnacl';
import { KeypairError } from '../core/index.ts';

/** An ed25519 wallet. `secretKey` never leaves this process: not in logs, errors or JSON. */
export class WalletKeypair {
  readonly publicKey: Uint8Array;
  readonly address: string;
  readonly #secretKey: Uint8Array;

  private constructor(secretKey: Uint8Array) {
    // A Solana keypair file stores the secret seed then the public key; re-deriving the public
    // key from the seed catches a corrupt or spliced file before it signs anything.
    const pair = nacl.sign.keyPair.fromSeed(secretKey.subarray(0, 32));
    if (!bytesEqual(pair.publicKey, secretKey.subarray(32))) {
      throw new KeypairError('keypair is inconsistent: its public half does not match its secret half');
    }
    this.#secretKey = pair.secretKey;
    this.publicKey = pair.publicKey;
    this.address = bs58.encode(pair.publicKey);
  }

  static fromSecretKey(secretKey: Uint8Array): WalletKeypair {
    if (secretKey.length !== 64) throw new KeypairError(`a secret key has 64 bytes, got ${secretKey.length}`);
    return new WalletKeypair(Uint8Array.from(secretKey));
  }

  static generate(): WalletKeypair {
    return new WalletKeypair(nacl.sign.keyPair().secretKey);
  }

  /** A base58-encoded 64-byte secret key (as Phantom exports it). */
  static fromBase58(text: string): WalletKeypair {
    let bytes: Uint8Array;
    try {
      bytes = bs58.decode(text.trim());
    } catch {
      throw new KeypairError('secret key is not valid base58');
    }
    return WalletKeypair.fromSecretKey(bytes);
  }

  /** A Solana CLI keypair file: a JSON array of 64 byte values. */
  static fromFile(path: string): WalletKeypair {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new KeypairError(code === 'ENOENT' ? `keypair file ${path} does not exist` : `cannot read keypair file ${path}: ${code ?? 'error'}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new KeypairError(`keypair file ${path} is not JSON (expected an array of 64 numbers)`);
    }
    if (!Array.isArray(parsed) || parsed.length !== 64 || !parsed.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) {
      throw new KeypairError(`keypair file ${path} must hold a JSON array of 64 byte values`);
    }
    return WalletKeypair.fromSecretKey(Uint8Array.from(parsed as number[]));
  }

  /** Detached ed25519 signature of the UTF-8 bytes of `message`, base58-encoded. */
  signMessage(message: string): string {
    return bs58.encode(nacl.sign.detached(new TextEncoder().encode(message), this.#secretKey));
  }

  /** The Solana CLI file form, for tools and tests that write a keypair file. */
  toFileJson(): string {
    return JSON.stringify(Array.from(this.#secretKey));
  }

  toJSON() {
    return { address: this.address };
  }
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
