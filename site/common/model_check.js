// @ts-check
// Validates the model-worker channel's messages (docs/models.md) against the JSON Schema
// generated from pyapp/protocol/model_messages.py (site/common/model_protocol.js). It knows the
// keywords that generator writes and refuses (fails closed) on any other, so a rule it cannot
// check never passes silently; tests/test_model_messages.py runs it under Node beside Python's
// `jsonschema` on the same messages.
//
//   checkRequest(data) -> null | {code: "unknown_type" | "bad_request", message}
//   checkReply(type, data) -> null | "what does not fit"     (the reply to a `type` request)
//   checkEvent(data) -> null | "what does not fit"          (the worker's, to the client)
//   checkPanelEvent(data) -> null | "what does not fit"     (the client's, to the Models panel)

import {
  MODEL_ERROR,
  MODEL_EVENTS,
  MODEL_REPLIES,
  MODEL_REQUESTS,
  MODEL_SCHEMA_DEFS,
  PANEL_EVENTS,
} from "./model_protocol.js";

const KEYWORDS = new Set([
  "$ref",
  "const",
  "enum",
  "type",
  "anyOf",
  "oneOf",
  "allOf",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "prefixItems",
  "minItems",
  "maxItems",
  "description",
]);

/**
 * A JSON Schema as the generator writes one: the keywords of KEYWORDS.
 * @typedef {object} Schema
 * @property {string} [$ref]
 * @property {unknown} [const]
 * @property {unknown[]} [enum]
 * @property {keyof typeof TYPES} [type]
 * @property {Schema[]} [anyOf]
 * @property {Schema[]} [oneOf]
 * @property {Schema[]} [allOf]
 * @property {Record<string, Schema>} [properties]
 * @property {string[]} [required]
 * @property {Schema | boolean} [additionalProperties]
 * @property {Schema} [items]
 * @property {Schema[]} [prefixItems]
 * @property {number} [minItems]
 * @property {number} [maxItems]
 * @property {string} [description]
 */

/** @typedef {Record<string, unknown>} JsonObject */

/** The generated definitions, each a Schema. */
const DEFS = /** @type {Readonly<Record<string, Schema>>} */ (MODEL_SCHEMA_DEFS);

const TYPES = {
  /** @type {(value: unknown) => value is null} */
  null: (value) => value === null,
  /** @type {(value: unknown) => value is boolean} */
  boolean: (value) => typeof value === "boolean",
  /** @param {unknown} value @returns {value is number} */
  integer: (value) => typeof value === "number" && Number.isInteger(value),
  /** @param {unknown} value @returns {value is number} */
  number: (value) => typeof value === "number" && Number.isFinite(value),
  /** @type {(value: unknown) => value is string} */
  string: (value) => typeof value === "string",
  /** @type {(value: unknown) => value is unknown[]} */
  array: (value) => Array.isArray(value),
  /** @param {unknown} value @returns {value is JsonObject} */
  object: (value) => value !== null && typeof value === "object" && !Array.isArray(value),
};

/** @param {unknown} value */
const show = (value) => (value === undefined ? "nothing" : JSON.stringify(value)?.slice(0, 60) ?? String(value));

// An object's keys as JSON would carry them (a key holding `undefined` is absent).
/** @param {JsonObject} value */
const keysOf = (value) => Object.keys(value).filter((key) => value[key] !== undefined);

/** @param {Schema} schema @param {JsonObject} value @param {string} path @returns {string | null} */
function objectProblem(schema, value, path) {
  const properties = schema.properties ?? {};
  for (const name of schema.required ?? []) {
    if (value[name] === undefined) return `${path}: missing ${name}`;
  }
  for (const key of keysOf(value)) {
    const rule = key in properties ? properties[key] : schema.additionalProperties;
    if (rule === false) return `${path}: unexpected key ${key}`;
    const found = rule === undefined || rule === true ? null : problem(rule, value[key], `${path}.${key}`);
    if (found) return found;
  }
  return null;
}

/** @param {Schema} schema @param {unknown[]} value @param {string} path @returns {string | null} */
function arrayProblem(schema, value, path) {
  if (schema.minItems !== undefined && value.length < schema.minItems) return `${path}: too few items`;
  if (schema.maxItems !== undefined && value.length > schema.maxItems) return `${path}: too many items`;
  for (const [i, item] of value.entries()) {
    const rule = schema.prefixItems?.[i] ?? schema.items;
    const found = rule ? problem(rule, item, `${path}[${i}]`) : null;
    if (found) return found;
  }
  return null;
}

/** @param {Schema} schema @param {unknown} value @param {string} path @returns {string | null} */
function alternativesProblem(schema, value, path) {
  if (schema.anyOf) {
    const found = schema.anyOf.map((rule) => problem(rule, value, path));
    if (found.every(Boolean)) return found.join("; or ");
  }
  if (schema.oneOf) {
    const found = schema.oneOf.map((rule) => problem(rule, value, path));
    const fitting = found.filter((one) => one === null).length;
    if (fitting === 0) return found.join("; or ");
    if (fitting > 1) return `${path}: fits ${fitting} of ${schema.oneOf.length} alternatives, not one`;
  }
  for (const rule of schema.allOf ?? []) {
    const found = problem(rule, value, path);
    if (found) return found;
  }
  return null;
}

// The first way `value` does not fit `schema` ("$.caps.timeout_ms: expected integer"), or null.
/** @param {Schema} schema @param {unknown} value @param {string} [path] @returns {string | null} */
export function problem(schema, value, path = "$") {
  const unknown = Object.keys(schema).find((key) => !KEYWORDS.has(key));
  if (unknown !== undefined) return `${path}: the schema keyword ${unknown} cannot be checked here`;
  if (schema.$ref) {
    const found = problem(DEFS[schema.$ref.replace("#/$defs/", "")], value, path);
    if (found) return found;
  }
  if ("const" in schema && value !== schema.const) return `${path}: expected ${show(schema.const)}, got ${show(value)}`;
  if (schema.enum && !schema.enum.includes(value)) return `${path}: expected one of ${schema.enum.join(", ")}, got ${show(value)}`;
  if (schema.type && !TYPES[schema.type](value)) return `${path}: expected ${schema.type}, got ${show(value)}`;
  const found = alternativesProblem(schema, value, path);
  if (found) return found;
  if (TYPES.object(value) && (schema.properties || schema.required || "additionalProperties" in schema)) {
    return objectProblem(schema, value, path);
  }
  if (Array.isArray(value)) return arrayProblem(schema, value, path);
  return null;
}

/** @param {string} name @returns {Schema} */
const definition = (name) => ({ $ref: `#/$defs/${name}` });

// What the records' own checks add to the schema (Python: their __post_init__).
/** @type {Readonly<Record<string, (request: JsonObject) => string | null>>} */
const RULES = {
  generate: (request) =>
    (request.prompt ?? null) === null === ((request.messages ?? null) === null)
      ? "generate needs exactly one of prompt and messages"
      : null,
};

// A request as received: null when it fits the protocol, else its refusal.
/** @param {unknown} data @returns {{ code: string, message: string } | null} */
export function checkRequest(data) {
  if (!TYPES.object(data) || typeof data.type !== "string") {
    return { code: MODEL_ERROR.BAD_REQUEST, message: `a request is an object with a string type, not ${show(data)}` };
  }
  const name = entry(MODEL_REQUESTS, data.type);
  if (name === null) return { code: MODEL_ERROR.UNKNOWN_TYPE, message: `unknown message type ${show(data.type)}` };
  const found = problem(definition(name), data) ?? entry(RULES, data.type)?.(data) ?? null;
  return found === null ? null : { code: MODEL_ERROR.BAD_REQUEST, message: `${data.type}: ${found}` };
}

// A table's entry for `key`, or null.
/** @template T @param {Readonly<Record<string, T>>} table @param {unknown} key @returns {T | null} */
function entry(table, key) {
  return typeof key === "string" && Object.hasOwn(table, key) ? table[key] : null;
}

// The reply to a request of `type`; to a type the protocol lacks, the bare envelope.
/** @param {unknown} type @param {unknown} data */
export function checkReply(type, data) {
  return problem(definition(entry(MODEL_REPLIES, type) ?? "ModelReply"), data);
}

/** @param {Readonly<Record<string, string>>} events @param {unknown} data */
function eventProblem(events, data) {
  const name = TYPES.object(data) ? entry(events, data.type) : null;
  return name === null ? `not an event: ${show(data)}` : problem(definition(name), data);
}

/** @param {unknown} data */
export const checkEvent = (data) => eventProblem(MODEL_EVENTS, data);
/** @param {unknown} data */
export const checkPanelEvent = (data) => eventProblem(PANEL_EVENTS, data);
