// The chat webview: draws the state the extension posts, sends input back.
(function () {
  const vscode = acquireVsCodeApi();
  const $ = (id) => document.getElementById(id);
  const messages = $("messages");
  const input = $("input");
  let opened = new Set();
  let commands = []; // the slash commands: {name, description}
  let matches = []; // the completions shown
  let selected = 0;

  function send() {
    const text = input.value.trim();
    if (!text) return;
    vscode.postMessage({ type: "send", text });
    input.value = "";
  }

  // Slash commands: a chip puts "/name " in the box; typing "/" and a word lists the commands
  // it starts (Tab, Enter or a click takes the selected one; Escape closes the list).
  function choose(name) {
    input.value = "/" + name + " ";
    hideCompletions();
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }

  function hideCompletions() {
    matches = [];
    $("completions").hidden = true;
  }

  function complete() {
    const typed = /^\/([\w.-]*)$/.exec(input.value);
    matches = typed ? commands.filter((c) => c.name.startsWith(typed[1])) : [];
    const list = $("completions");
    if (!matches.length) return hideCompletions();
    selected = Math.min(selected, matches.length - 1);
    list.replaceChildren(
      ...matches.map((c, i) => {
        const item = document.createElement("li");
        item.setAttribute("role", "option");
        item.dataset.name = c.name;
        if (i === selected) item.className = "selected";
        const name = document.createElement("span");
        name.textContent = "/" + c.name;
        const description = document.createElement("span");
        description.className = "description";
        description.textContent = c.description;
        item.append(name, description);
        item.addEventListener("mousedown", (e) => {
          e.preventDefault();
          choose(c.name);
        });
        return item;
      }),
    );
    list.hidden = false;
  }

  function drawCommands() {
    $("commands").replaceChildren(
      ...commands.map((c) => {
        const chip = document.createElement("button");
        chip.className = "chip";
        chip.textContent = "/" + c.name;
        chip.title = c.description;
        chip.dataset.name = c.name;
        chip.addEventListener("click", () => choose(c.name));
        return chip;
      }),
    );
  }

  input.addEventListener("input", () => {
    selected = 0;
    complete();
  });
  input.addEventListener("blur", hideCompletions);

  $("send").addEventListener("click", send);
  input.addEventListener("keydown", (e) => {
    if (matches.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        selected = (selected + (e.key === "ArrowDown" ? 1 : matches.length - 1)) % matches.length;
        return complete();
      }
      if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey)) {
        e.preventDefault();
        return choose(matches[selected].name);
      }
      if (e.key === "Escape") {
        e.preventDefault();
        return hideCompletions();
      }
    }
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
    if (JSON.stringify(state.commands) !== JSON.stringify(commands)) {
      commands = state.commands || [];
      drawCommands();
    }
  }

  window.addEventListener("message", (event) => {
    if (event.data && event.data.type === "state") draw(event.data.state);
  });
  vscode.postMessage({ type: "ready" });
})();
