import type { z } from 'zod';

/**
 * Terminal escape sequences (CSI, OSC, and the two-byte ones), then any C0/C1 control
 * character or bidirectional override left: text from the server or a strategy that a
 * terminal, a log viewer or a chat client would otherwise act on.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const ESCAPES = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-_]?|\u009b[0-?]*[ -/]*[@-~]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `s` as one line of plain text: escape sequences removed, line breaks, tabs and other controls made spaces. */
export function plainText(s: string): string {
  return s.replace(ESCAPES, '').replace(CONTROLS, ' ');
}

/** A value as JSON, short enough for a line of a message. */
export function shortJson(value: unknown): string {
  const text = value === undefined ? 'undefined' : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * A schema's refusal as one line: each issue as `key.path: message`, unknown keys named
 * (zod's own pretty form spans lines, with ✖ and → marks).
 */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const at = issue.path.map(String).join('.') || '(top level)';
      if (issue.code === 'unrecognized_keys') {
        const keys = issue.keys.map((k) => (at === '(top level)' ? k : `${at}.${k}`));
        return `unknown key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}`;
      }
      return `${at}: ${issue.message}`;
    })
    .join('; ');
}

/**
 * A weight change as people read it: percents to `minDigits` decimals, or as many more (up to
 * four) as it takes for the two to differ. A reweighting of 33.31 % to 33.34 % read "33.3% ->
 * 33.3%" on the dashboard, and 11.962 % to 11.958 % "11.96% -> 11.96%" in an alert. The
 * dashboard runs it in the page too (its source is put in the script): it uses nothing else.
 */
export function weightChange(from: number, to: number, minDigits = 1): string {
  let digits = minDigits;
  while (digits < 4 && (from * 100).toFixed(digits) === (to * 100).toFixed(digits)) digits++;
  // No change to tell apart: the fewest decimals.
  if ((from * 100).toFixed(digits) === (to * 100).toFixed(digits)) digits = minDigits;
  return `${(from * 100).toFixed(digits)}% -> ${(to * 100).toFixed(digits)}%`;
}

/** A span of time as people say it: seconds under a minute, minutes under two hours, hours after (one decimal at most). */
export function durationText(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1_000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${+(ms / 3_600_000).toFixed(1)} h`;
}

/** A time to the minute, in UTC, as a line of a terminal shows it: `2026-06-01 12:30`. */
export function minuteText(t: number | string): string {
  return new Date(t).toISOString().slice(0, 16).replace('T', ' ');
}

/**
 * A JSON.parse error's message with where it is as an editor shows it: Node 20 says only
 * `at position 66` (trial 32), so the line and column are added unless it gave them (later V8s do).
 */
export function jsonSyntaxText(e: unknown, text: string): string {
  const message = plainText(e instanceof Error ? e.message : String(e));
  const at = /at position (\d+)/.exec(message);
  if (!at || /\bline \d+/.test(message)) return message;
  const before = text.slice(0, Number(at[1])).split('\n');
  return `${message} (line ${before.length} column ${before.at(-1)!.length + 1})`;
}

/** `s` matched literally inside a RegExp. */
export const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A list of names in a table cell: all of four or fewer, else the first three and how many more. */
export function fewNames(names: readonly string[]): string {
  return names.length <= 4 ? names.join(', ') : `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`;
}
