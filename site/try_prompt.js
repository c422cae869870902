// The Models panel's "try a prompt" box: one prompt through the Python path (the bridge's
// `model_generate`, answered by pyapp.browser.model in the PyScript worker), its completion
// and where the time went. The panel (site/models_panel.js) owns the state it reads.

const $ = (selector) => document.querySelector(selector);

export function wireTryPrompt(panel) {
  $("#try-form").addEventListener("submit", (event) => tryPrompt(panel, event));
  $("#try-cancel").addEventListener("click", () => {
    if (panel.client.cancel()) $("#try-status").textContent = "Cancelling…";
  });
}

async function tryPrompt(panel, event) {
  event.preventDefault();
  const maxNew = Number($("#try-max-new").value);
  const timeoutS = Number($("#try-timeout").value);
  if (!Number.isInteger(maxNew) || maxNew < 1 || !(timeoutS > 0)) {
    $("#try-status").textContent = "Max new tokens must be a whole number ≥ 1 and the timeout > 0.";
    return;
  }
  const caps = { max_input_tokens: 1024, max_new_tokens: maxNew, max_output_bytes: 16384, timeout_ms: Math.round(timeoutS * 1000) };
  panel.generating = true;
  $("#try-generate").disabled = true;
  $("#try-cancel").disabled = false;
  const before = panel.element.dataset.state;
  panel.set("generating");
  $("#try-status").textContent = "Generating through Python…";
  $("#try-output").textContent = "";
  $("#try-meta").textContent = "";
  try {
    const result = await panel.request("model_generate", { prompt: $("#try-prompt").value, caps }, caps.timeout_ms + 120_000);
    showCompletion(result);
    window.lab.lastModelResult = result;
  } catch (error) {
    $("#try-status").textContent = `Generation failed: ${error.message}`;
  } finally {
    panel.generating = false;
    $("#try-cancel").disabled = true;
    const client = panel.client;
    panel.set(client.state === "none" ? before : client.state);
    $("#try-generate").disabled = client.state !== "loaded" && client.state !== "loading";
  }
}

function showCompletion(result) {
  const c = result.completion;
  $("#try-output").textContent = c.text;
  const ms = (value) => (value === null ? "—" : `${value.toFixed(1)} ms`);
  const failure = c.failure ? ` · failure ${c.failure.code}: ${c.failure.message}` : "";
  $("#try-meta").textContent =
    `finish: ${c.finish_reason ?? "none"} · input tokens ${c.input_tokens ?? "—"} · output tokens ${c.output_tokens ?? "—"}` +
    ` · generation ${ms(c.generation_ms)} · first token ${ms(c.time_to_first_token_ms)}` +
    ` · bridge overhead ${ms(result.timing?.bridge_overhead_ms ?? null)}${failure}`;
  $("#try-status").textContent = `Finished: ${c.finish_reason ?? c.failure?.code ?? "no result"}.`;
}
