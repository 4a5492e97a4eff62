// The chat webview: draws the state the extension posts, sends input back.
(function () {
  const vscode = acquireVsCodeApi();
  const $ = (id) => document.getElementById(id);
  const messages = $("messages");
  const input = $("input");
  let opened = new Set();

  function send() {
    const text = input.value.trim();
    if (!text) return;
    vscode.postMessage({ type: "send", text });
    input.value = "";
  }

  $("send").addEventListener("click", send);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      send();
    }
  });
  $("stop").addEventListener("click", () => vscode.postMessage({ type: "abort" }));
  $("sessions").addEventListener("click", () => vscode.postMessage({ type: "sessions" }));
  $("new").addEventListener("click", () => vscode.postMessage({ type: "newChat" }));
  for (const button of document.querySelectorAll("#pending button")) {
    button.addEventListener("click", () =>
      vscode.postMessage({ type: "answer", outcome: button.dataset.outcome, feedback: !!button.dataset.feedback }),
    );
  }
  messages.addEventListener("toggle", (e) => {
    const key = e.target.dataset && e.target.dataset.key;
    if (!key) return;
    if (e.target.open) opened.add(key);
    else opened.delete(key);
  }, true);

  function draw(state) {
    const atBottom = messages.scrollHeight - messages.scrollTop - messages.clientHeight < 40;
    messages.innerHTML = state.html;
    for (const details of messages.querySelectorAll("details[data-key]")) {
      if (opened.has(details.dataset.key)) details.open = true;
    }
    if (atBottom) messages.scrollTop = messages.scrollHeight;
    $("todos").innerHTML = state.todos;
    $("title").textContent = state.title;
    $("state").textContent = state.status;
    $("context").textContent = state.context ? " · " + state.context : "";
    $("stop").hidden = !state.busy;
    $("send").disabled = state.busy;
    const pending = $("pending");
    if (state.pending && state.pending.kind === "permission") {
      pending.hidden = false;
      $("pending-title").textContent = "Totem wants to: " + state.pending.title;
    } else {
      pending.hidden = true;
    }
    document.body.dataset.busy = state.busy ? "1" : "0";
  }

  window.addEventListener("message", (event) => {
    if (event.data && event.data.type === "state") draw(event.data.state);
  });
  vscode.postMessage({ type: "ready" });
})();
