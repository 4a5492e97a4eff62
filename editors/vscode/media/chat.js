// The chat webview: draws the state the extension posts, sends input back.
(function () {
  const vscode = acquireVsCodeApi();
  const $ = (id) => document.getElementById(id);
  const messages = $("messages");
  const input = $("input");
  // Follow the end while the user has not scrolled up (set by the user's own scrolling).
  let follow = true;
  let commands = []; // the slash commands: {name, description}
  let matches = []; // the completions shown
  let selected = 0;

  function send() {
    const text = input.value.trim();
    if (!text) return;
    vscode.postMessage({ type: "send", text });
    input.value = "";
    // The message the user sends is scrolled to, and the chat follows the answer again.
    follow = true;
  }

  const atEnd = () => messages.scrollHeight - messages.scrollTop - messages.clientHeight < 24;
  function toEnd() {
    if (follow) messages.scrollTop = messages.scrollHeight;
  }
  messages.addEventListener("scroll", () => {
    follow = atEnd();
  });
  // The permission panel or the todos appearing make the list shorter: keep the end in view.
  new ResizeObserver(toEnd).observe(messages);

  /** Make `target`'s children those of `source`, touching only what differs: a streamed chunk
   * appends to the text it extends, so a selection elsewhere (or in the text so far) survives.
   * A details block keeps the open state the user gave it. */
  function morph(target, source) {
    const want = Array.from(source.childNodes);
    for (let i = 0; i < want.length; i++) {
      const next = want[i];
      const have = target.childNodes[i];
      if (!have) {
        target.appendChild(next.cloneNode(true));
      } else if (have.nodeType === Node.TEXT_NODE && next.nodeType === Node.TEXT_NODE) {
        const old = have.data;
        if (old === next.data) continue;
        if (next.data.startsWith(old)) have.appendData(next.data.slice(old.length));
        else have.data = next.data;
      } else if (have.nodeType === Node.ELEMENT_NODE && next.nodeType === Node.ELEMENT_NODE && have.nodeName === next.nodeName) {
        if (have.isEqualNode(next)) continue;
        for (const attr of Array.from(have.attributes)) {
          if (!next.hasAttribute(attr.name) && attr.name !== "open") have.removeAttribute(attr.name);
        }
        for (const attr of Array.from(next.attributes)) {
          if (attr.name === "open") continue; // the user's choice, once shown
          if (have.getAttribute(attr.name) !== attr.value) have.setAttribute(attr.name, attr.value);
        }
        morph(have, next);
      } else {
        target.replaceChild(next.cloneNode(true), have);
      }
    }
    while (target.childNodes.length > want.length) target.removeChild(target.lastChild);
  }
  const template = document.createElement("template");
  const jobsTemplate = document.createElement("template");

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
  messages.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("button");
    if (!button) return;
    if (button.classList.contains("copy")) {
      const code = button.parentElement.querySelector("code");
      vscode.postMessage({ type: "copy", text: code ? code.textContent : "" });
      button.textContent = "Copied";
      setTimeout(() => (button.textContent = "Copy"), 1500);
    } else if (button.classList.contains("retry")) {
      follow = true;
      vscode.postMessage({ type: "send", text: button.dataset.text });
    }
  });

  // The job list: Stop sends totem/jobStop (through the extension), Dismiss drops an ended job.
  $("jobs").addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("button");
    if (!button || button.disabled) return;
    const type = button.classList.contains("job-stop") ? "jobStop" : button.classList.contains("job-dismiss") ? "jobDismiss" : null;
    if (type) vscode.postMessage({ type, sessionId: button.dataset.session, jobId: button.dataset.job });
  });

  function draw(state) {
    // Before the messages: it shows or hides their Retry button, and the end must be measured after.
    document.body.dataset.busy = state.busy ? "1" : "0";
    template.innerHTML = state.html;
    morph(messages, template.content);
    toEnd();
    // Morphed, not replaced: a redraw while streaming must not swallow a click on Stop.
    jobsTemplate.innerHTML = state.jobs || "";
    morph($("jobs"), jobsTemplate.content);
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
      const files = state.pending.files || [];
      const list = $("pending-files");
      list.hidden = files.length < 2;
      $("pending-count").textContent = files.length + " files in this change:";
      $("pending-list").replaceChildren(
        ...files.map((f) => {
          const item = document.createElement("li");
          item.textContent = f;
          return item;
        }),
      );
      $("accept").textContent = files.length > 1 ? "Accept all " + files.length + " files" : "Accept";
      $("always").textContent = state.pending.always ? "Always (" + state.pending.always + ")" : "Always";
      $("always").title = state.pending.always ? "Allow, and add the session rule " + state.pending.always : "";
      toEnd();
    } else {
      pending.hidden = true;
    }
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
