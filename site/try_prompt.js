// @ts-check
// The Models panel's "try a prompt" box: one prompt through the Python path (the bridge's
// `model_generate`, answered by pyapp.browser.model in the PyScript worker), its completion
// and where the time went. The panel (site/models_panel.js) owns the state it reads.

import { $ } from "./dom.js";
import { messageOf } from "./common/errors.js";

/** @import { Panel } from "./models_panel.js" */
/** @import { Generated } from "./lab_types.js" */

/** @param {Panel} panel */
export function wireTryPrompt(panel) {
  $("#try-form").addEventListener("submit", (event) => tryPrompt(panel, event));
  $("#try-cancel").addEventListener("click", () => {
    if (panel.client.cancel()) $("#try-status").textContent = "Cancelling…";
  });
}

/** @param {Panel} panel @param {Event} event */
async function tryPrompt(panel, event) {
  event.preventDefault();
  const maxNew = Number($("#try-max-new", HTMLInputElement).value);
  const timeoutS = Number($("#try-timeout", HTMLInputElement).value);
  if (!Number.isInteger(maxNew) || maxNew < 1 || !(timeoutS > 0)) {
    $("#try-status").textContent = "Max new tokens must be a whole number ≥ 1 and the timeout > 0.";
    return;
  }
  const caps = { max_input_tokens: 1024, max_new_tokens: maxNew, max_output_bytes: 16384, timeout_ms: Math.round(timeoutS * 1000) };
  panel.generating = true;
  $("#try-generate", HTMLButtonElement).disabled = true;
  $("#try-cancel", HTMLButtonElement).disabled = false;
  const before = panel.element.dataset.state;
  panel.set("generating");
  $("#try-status").textContent = "Generating through Python…";
  $("#try-output").textContent = "";
  $("#try-meta").textContent = "";
  try {
    const prompt = $("#try-prompt", HTMLTextAreaElement).value;
    const result = await panel.request("model_generate", { prompt, caps }, caps.timeout_ms + 120_000);
    showCompletion(result);
    window.lab.lastModelResult = result;
  } catch (error) {
    $("#try-status").textContent = `Generation failed: ${messageOf(error)}`;
  } finally {
    panel.generating = false;
    $("#try-cancel", HTMLButtonElement).disabled = true;
    const client = panel.client;
    panel.set(client.state === "none" ? (before ?? "idle") : client.state);
    $("#try-generate", HTMLButtonElement).disabled = client.state !== "loaded" && client.state !== "loading";
  }
}

/** @param {Generated} result */
function showCompletion(result) {
  const c = result.completion;
  $("#try-output").textContent = c.text;
  /** @param {number | null} value */
  const ms = (value) => (value === null ? "—" : `${value.toFixed(1)} ms`);
  const failure = c.failure ? ` · failure ${c.failure.code}: ${c.failure.message}` : "";
  $("#try-meta").textContent =
    `finish: ${c.finish_reason ?? "none"} · input tokens ${c.input_tokens ?? "—"} · output tokens ${c.output_tokens ?? "—"}` +
    ` · generation ${ms(c.generation_ms)} · first token ${ms(c.time_to_first_token_ms)}` +
    ` · bridge overhead ${ms(result.timing?.bridge_overhead_ms ?? null)}${failure}`;
  $("#try-status").textContent = `Finished: ${c.finish_reason ?? c.failure?.code ?? "no result"}.`;
}
