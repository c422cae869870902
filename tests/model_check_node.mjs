// Runs site/common/model_check.js under Node for tests/test_model_messages.py: reads
// {"schema": [[definition, value], ...], "requests": [value, ...]} on stdin and prints
// {"schema": [problem | null, ...], "requests": [{code, message} | null, ...]}.

import { readFileSync } from "node:fs";
import { checkRequest, problem } from "../site/common/model_check.js";

const cases = JSON.parse(readFileSync(0, "utf-8"));
const answer = {
  schema: cases.schema.map(([name, value]) => problem({ $ref: `#/$defs/${name}` }, value)),
  requests: cases.requests.map((value) => checkRequest(value)),
};
process.stdout.write(JSON.stringify(answer));
