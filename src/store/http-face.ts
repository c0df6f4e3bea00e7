/** The runtime key under which a process records its HTTP face at its start: `status` names it in its advice. */
export const HTTP_FACE = 'httpFace';

export interface HttpFaceRecord {
  pid: number;
  /** null: started without one. */
  url: string | null;
  /** Whether its routes need the bearer token of `http.token`. */
  token: boolean;
  /** Its `http.readyMaxAgeS` (/readyz's limit), which `status --check` takes too; absent from an older indexbot's record. */
  readyMaxAgeS?: number;
}
