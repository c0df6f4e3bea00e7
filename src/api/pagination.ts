import { ResponseValidationError } from '../core/index.ts';

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

/** More pages than any list of the service holds (a million items at 100 a page): past it, the server is looping. */
export const MAX_PAGES = 10_000;

/**
 * All items of a list endpoint, fetched a page at a time as they are consumed:
 * `for await (const item of client.iterateTokens())`, or `.pages()` for page-level progress.
 * It stops at the server's total (or at a short page when there is none) and never asks
 * for a page past the end. A server that ignores the paging parameters would otherwise be
 * read forever (or, with a total, padded with copies): a page equal to the one before it,
 * or more than `maxPages` pages, is a `ResponseValidationError` naming the endpoint.
 */
export class PageIterator<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (request: PageRequest) => Promise<Page<T>>,
    private readonly limit: number,
    private readonly endpoint = 'list',
    private readonly maxPages = MAX_PAGES,
  ) {}

  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let received = 0;
    let previous: string | undefined;
    for (let page = 1; ; page++) {
      if (page > this.maxPages) throw this.broken(`more than ${this.maxPages} pages of ${this.limit}: the server does not seem to honour the paging parameters`);
      const current = await this.fetchPage({ page, limit: this.limit, offset: received });
      if (current.items.length > 0) {
        const text = JSON.stringify(current.items);
        if (text === previous) throw this.broken(`page ${page} repeats page ${page - 1}: the server ignores the paging parameters`);
        previous = text;
      }
      yield current;
      received += current.items.length;
      if (current.items.length === 0) return;
      if (current.total !== undefined ? received >= current.total : current.items.length < this.limit) return;
    }
  }

  private broken(message: string): ResponseValidationError {
    return new ResponseValidationError(this.endpoint, [{ path: 'meta.pagination', message }]);
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
