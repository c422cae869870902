// Small DOM helpers the experiment's renderers share. No state here.

export { FIXTURE_LABEL } from "./lab_protocol.js";

export const fmt = (value, digits = 3) => (typeof value === "number" ? value.toFixed(digits) : "—");
export const yesNo = (value) => (value === true ? "yes" : value === false ? "no" : "—");

export function h(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== null && text !== undefined) node.textContent = text;
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
}

export function dl(rows) {
  const list = h("dl", null, { class: "facts" });
  for (const [term, value] of rows) list.append(h("dt", term), h("dd", value === null || value === undefined ? "—" : String(value)));
  return list;
}

export function table(headers, rows, className) {
  const t = h("table", null, className ? { class: className } : {});
  const head = t.createTHead().insertRow();
  for (const header of headers) head.append(h("th", header, { scope: "col" }));
  const body = t.createTBody();
  for (const cells of rows) {
    const row = body.insertRow();
    for (const value of cells) row.insertCell().textContent = value === null || value === undefined ? "—" : String(value);
  }
  return t;
}
