// @ts-check
// What a caught value says, for the page and both workers: JavaScript may throw anything (an
// Error, a DOMException, a string, a worker's plain object), so a `catch` reads it through here.

// The one line a caught value carries: its `message` where it has one, else itself as text.
/** @param {unknown} error @returns {string} */
export function messageOf(error) {
  if (typeof error === "object" && error !== null && "message" in error) return String(error.message);
  return String(error);
}

// The protocol code a caught value carries (a refused reply's, see ./envelope.js ReplyFailed),
// or null.
/** @param {unknown} error @returns {string | null} */
export function codeOf(error) {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") return error.code;
  return null;
}
