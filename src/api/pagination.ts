/** One page of a list endpoint, whichever of the two list forms the server used. */
export interface Page<T> {
  items: T[];
  /** The server's total, when it sent one. */
  total: number | undefined;
  page: number;
  limit: number;
}

export interface PageRequest {
  page: number;
  limit: number;
  /** Items already received, for `limit`/`offset` paging. */
  offset: number;
}

/**
 * All items of a list endpoint, fetched a page at a time as they are consumed:
 * `for await (const item of client.iterateTokens())`, or `.pages()` for page-level progress.
 * It stops at the server's total (or at a short page when there is none) and never asks
 * for a page past the end.
 */
export class PageIterator<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (request: PageRequest) => Promise<Page<T>>,
    private readonly limit: number,
  ) {}

  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let received = 0;
    for (let page = 1; ; page++) {
      const current = await this.fetchPage({ page, limit: this.limit, offset: received });
      yield current;
      received += current.items.length;
      if (current.items.length === 0) return;
      if (current.total !== undefined ? received >= current.total : current.items.length < this.limit) return;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  async toArray(): Promise<T[]> {
    const all: T[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}
