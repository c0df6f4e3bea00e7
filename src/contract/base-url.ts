/** The spec's base address ends in the API's version segment, `/v1`: every path is relative to it. */
export function hasVersionSegment(url: URL): boolean {
  return /\/v1$/.test(url.pathname.replace(/\/+$/, ''));
}
