/** The error `fn` throws; fails the test when it throws nothing. */
export function caught<E extends Error = Error>(fn: () => unknown): E {
  try {
    fn();
  } catch (e) {
    return e as E;
  }
  throw new Error('expected an error, none was thrown');
}
