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

  // Images to send with the next message (pasted, or picked with the attach button), for a
  // model that sees images: {name, mimeType, data (base64)}.
  let images = [];
  let vision = false;

  function send() {
    const text = input.value.trim();
    if (!text) return;
    vscode.postMessage({ type: "send", text, images: vision ? images : [] });
    images = [];
    drawAttachments();
    input.value = "";
    hideCompletions();
    drawInputChips();
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

  // Completion (totem/complete, through the extension): the word before the cursor, when it
  // starts with "@" (a file), "#" (the editor's buffer, selection, diagnostics) or, at the start
  // of the input, "/" (a command). Tab, Enter or a click takes the selected item; Escape closes.
  // A slash-command chip puts "/name " in the box.
  let asked = 0; // the id of the latest completion request; older answers are dropped
  let span = { start: 0, end: 0 }; // what the chosen item replaces

  function insert(text, start, end) {
    const after = input.value.slice(end);
    const spaced = /\s$/.test(text) || /^\s/.test(after) ? text : text + " ";
    input.value = input.value.slice(0, start) + spaced + after;
    const at = start + spaced.length;
    hideCompletions();
    input.focus();
    input.setSelectionRange(at, at);
    drawInputChips();
  }

  function choose(name) {
    input.value = "";
    insert("/" + name + " ", 0, 0);
  }

  function hideCompletions() {
    matches = [];
    $("completions").hidden = true;
  }

  function requestCompletion() {
    const position = input.selectionStart;
    const before = input.value.slice(0, position);
    const word = /(\S*)$/.exec(before)[1];
    const wanted = word.startsWith("@") || word.startsWith("#") || (word.startsWith("/") && before.trimStart() === word);
    if (!wanted) return hideCompletions();
    vscode.postMessage({ type: "complete", id: ++asked, text: input.value, position });
  }

  function showCompletions(answer) {
    if (answer.id !== asked) return;
    matches = answer.items || [];
    span = { start: answer.start, end: answer.end };
    const list = $("completions");
    if (!matches.length) return hideCompletions();
    selected = Math.min(selected, matches.length - 1);
    list.replaceChildren(
      ...matches.map((c, i) => {
        const item = document.createElement("li");
        item.setAttribute("role", "option");
        item.dataset.kind = c.kind;
        if (i === selected) item.className = "selected";
        const name = document.createElement("span");
        name.textContent = c.label;
        const description = document.createElement("span");
        description.className = "description";
        description.textContent = c.detail || "";
        item.append(name, description);
        item.addEventListener("mousedown", (e) => {
          e.preventDefault();
          insert(c.insertText, span.start, span.end);
        });
        return item;
      }),
    );
    list.hidden = false;
  }

  function redrawSelection() {
    const items = $("completions").children;
    for (let i = 0; i < items.length; i++) items[i].className = i === selected ? "selected" : "";
  }

  // The mentions in the box, drawn as chips behind its text (the same text, transparent, in a
  // layer under the transparent textarea).
  const MENTION = /(^|\s)(@[^\s@]+|#(?:buffer|selection|diagnostics)(?![\w-]))/g;
  function drawInputChips() {
    const layer = $("input-chips");
    const text = input.value;
    const parts = [];
    let last = 0;
    for (const m of text.matchAll(MENTION)) {
      const at = m.index + m[1].length;
      parts.push(document.createTextNode(text.slice(last, at)));
      const mark = document.createElement("mark");
      mark.className = "chip";
      mark.textContent = m[2];
      parts.push(mark);
      last = at + m[2].length;
    }
    // A last empty line still takes a line, as it does in the textarea.
    parts.push(document.createTextNode(text.slice(last) + "\n"));
    layer.replaceChildren(...parts);
    layer.scrollTop = input.scrollTop;
  }
  input.addEventListener("scroll", () => ($("input-chips").scrollTop = input.scrollTop));

  function drawAttachments() {
    $("attachments").replaceChildren(
      ...images.map((image, i) => {
        const item = document.createElement("span");
        item.className = "attachment-chip";
        item.title = image.name;
        const thumb = document.createElement("img");
        thumb.src = "data:" + image.mimeType + ";base64," + image.data;
        thumb.alt = image.name;
        const name = document.createElement("span");
        name.textContent = image.name;
        const remove = document.createElement("button");
        remove.className = "icon";
        remove.title = "Do not send this image";
        remove.textContent = "×";
        remove.addEventListener("click", () => {
          images.splice(i, 1);
          drawAttachments();
        });
        item.append(thumb, name, remove);
        return item;
      }),
    );
  }

  // A pasted image goes to the attachment row (when the model sees images); text pastes as text.
  input.addEventListener("paste", (e) => {
    const files = Array.from((e.clipboardData && e.clipboardData.files) || []).filter((f) => /^image\/(png|jpeg|gif|webp)$/.test(f.type));
    if (!files.length || !vision) return;
    e.preventDefault();
    for (const file of files) {
      const reader = new FileReader();
      reader.onload = () => {
        images.push({ name: file.name || "pasted image", mimeType: file.type, data: String(reader.result).replace(/^data:[^,]*,/, "") });
        drawAttachments();
      };
      reader.readAsDataURL(file);
    }
  });
  $("attach").addEventListener("click", () => vscode.postMessage({ type: "attach" }));

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
    drawInputChips();
    requestCompletion();
  });
  input.addEventListener("blur", hideCompletions);

  $("send").addEventListener("click", send);
  input.addEventListener("keydown", (e) => {
    if (matches.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        selected = (selected + (e.key === "ArrowDown" ? 1 : matches.length - 1)) % matches.length;
        return redrawSelection();
      }
      if (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey)) {
        e.preventDefault();
        return insert(matches[selected].insertText, span.start, span.end);
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
  $("show-pending").addEventListener("click", () => vscode.postMessage({ type: "showPending" }));
  // A file of the change: its diff again (its tab may have been closed).
  $("pending-list").addEventListener("click", (e) => {
    const link = e.target.closest && e.target.closest("a.pending-file");
    if (!link) return;
    e.preventDefault();
    vscode.postMessage({ type: "showPending", path: link.dataset.path });
  });
  for (const button of document.querySelectorAll("#pending button[data-outcome]")) {
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
      vscode.postMessage({ type: "retry", text: button.dataset.text });
    } else if (button.classList.contains("rewind")) {
      vscode.postMessage({ type: "rewind", messageId: button.dataset.message });
    } else if (button.classList.contains("fork")) {
      vscode.postMessage({ type: "fork", messageId: button.dataset.message });
    } else if (button.classList.contains("regenerate")) {
      follow = true;
      vscode.postMessage({ type: "regenerate", requestId: button.closest(".model").dataset.request });
    } else if (button.classList.contains("queue-edit") || button.classList.contains("queue-remove")) {
      const type = button.classList.contains("queue-edit") ? "queueEdit" : "queueRemove";
      vscode.postMessage({ type, id: Number(button.dataset.queued) });
    } else if (button.classList.contains("variant") && !button.disabled) {
      vscode.postMessage({ type: "variant", requestId: button.closest(".model").dataset.request, index: Number(button.dataset.index) });
    }
  });

  // The chats' tabs: a click shows one, × closes it.
  $("tabs").addEventListener("click", (e) => {
    const tab = e.target.closest && e.target.closest(".tab");
    if (!tab) return;
    const close = e.target.closest(".tab-close");
    vscode.postMessage({ type: close ? "closeTab" : "tab", key: Number(tab.dataset.key) });
  });
  $("model").addEventListener("change", () => vscode.postMessage({ type: "setModel", model: $("model").value }));
  $("mode").addEventListener("change", () => vscode.postMessage({ type: "setMode", mode: $("mode").value }));

  let shownTab;
  function drawTabs(tabs) {
    const bar = $("tabs");
    bar.hidden = tabs.length < 2;
    bar.replaceChildren(
      ...tabs.map((t) => {
        const tab = document.createElement("span");
        tab.className = "tab" + (t.current ? " current" : "") + (t.busy ? " busy" : "");
        tab.setAttribute("role", "tab");
        tab.setAttribute("aria-selected", t.current ? "true" : "false");
        tab.dataset.key = String(t.key);
        tab.title = t.title;
        const title = document.createElement("span");
        title.className = "tab-title";
        title.textContent = (t.busy ? "● " : "") + t.title;
        const close = document.createElement("button");
        close.className = "tab-close icon";
        close.title = "Close this chat (its session stays stored)";
        close.textContent = "×";
        tab.append(title, close);
        return tab;
      }),
    );
    // A chat that became the shown one (a fork, a reopened session: added at the end) is
    // scrolled into the strip once.
    const current = tabs.find((t) => t.current);
    if (current && current.key !== shownTab) {
      shownTab = current.key;
      const tab = bar.querySelector(".tab.current");
      if (tab && !bar.hidden) tab.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  }

  function drawPickers(state) {
    const model = $("model");
    const ids = state.models.length ? state.models : [""];
    if (JSON.stringify(Array.from(model.options).map((o) => o.value)) !== JSON.stringify(ids)) {
      model.replaceChildren(
        ...ids.map((id) => {
          const option = document.createElement("option");
          option.value = id;
          option.textContent = id || "default model";
          return option;
        }),
      );
    }
    if (document.activeElement !== model) model.value = state.model;
    if (document.activeElement !== $("mode")) $("mode").value = state.mode;
  }

  // The context ring: the share of the window the next request takes.
  const CIRCUMFERENCE = 2 * Math.PI * 15;
  function drawRing(ring) {
    const box = $("ring");
    box.hidden = !ring;
    if (!ring) return;
    const used = ring.percent === null ? 0 : (ring.percent / 100) * CIRCUMFERENCE;
    const arc = box.querySelector(".ring-used");
    arc.setAttribute("stroke-dasharray", used + " " + CIRCUMFERENCE);
    box.dataset.level = ring.percent === null ? "unknown" : ring.percent >= 90 ? "full" : ring.percent >= 70 ? "high" : "ok";
    box.title = "Context: " + ring.tooltip;
    $("ring-label").textContent = ring.label;
  }

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
    drawRing(state.ring);
    vision = !!state.vision;
    $("attach").hidden = !vision;
    // A model nobody said sees images: offered, with that said.
    $("attach").textContent = state.visionUnknown ? "Image… (vision unknown)" : "Image…";
    $("attach").title = state.visionUnknown
      ? "Whether this model sees images is unknown (set vision in its [models] entry); attach an image anyway"
      : "Attach an image (or paste one into the box)";
    drawTabs(state.tabs || []);
    drawPickers(state);
    $("stop").hidden = !state.busy;
    // While a turn runs a message is queued (messageQueue.ts), sent when the turn ends.
    $("send").textContent = state.busy ? "Queue" : "Send";
    $("send").title = state.busy ? "Queue this message: it is sent when the turn ends" : "Send";
    const pending = $("pending");
    if (state.pending && state.pending.kind === "permission") {
      pending.hidden = false;
      $("pending-title").textContent = "Totem wants to: " + state.pending.title;
      const files = state.pending.files || [];
      const reviewed = !!state.pending.reviewed;
      const list = $("pending-files");
      // A reviewed change lists its files as links to their diffs, one file or several.
      list.hidden = reviewed ? !files.length : files.length < 2;
      $("pending-count").textContent = files.length === 1 ? "The file of this change:" : files.length + " files in this change:";
      $("pending-list").replaceChildren(
        ...files.map((f) => {
          const item = document.createElement("li");
          if (reviewed) {
            const link = document.createElement("a");
            link.className = "pending-file";
            link.href = "#";
            link.dataset.path = f;
            link.title = "Open the diff of " + f;
            link.textContent = f;
            item.append(link);
          } else item.textContent = f;
          return item;
        }),
      );
      // Back to the question: the diff of a change, the modal of anything else (dismissed is not answered).
      $("show-pending").textContent = reviewed ? "Show diff" : "Show question";
      $("show-pending").title = reviewed ? "Open the change's diff again" : "Put the question up again";
      $("accept").textContent = files.length > 1 ? "Accept all " + files.length + " files" : "Accept";
      $("always").textContent = state.pending.always ? "Always (" + state.pending.always + ")" : "Always";
      $("always").title = state.pending.always ? "Allow, and add the session rule " + state.pending.always : "";
      const review = state.pending.review || [];
      $("pending-review").hidden = !review.length;
      $("pending-review").replaceChildren(
        ...review.map((line) => {
          const item = document.createElement("li");
          item.textContent = line;
          return item;
        }),
      );
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
    const m = event.data || {};
    if (m.type === "state") draw(m.state);
    else if (m.type === "completions") showCompletions(m);
    else if (m.type === "attached") {
      images.push(...m.images);
      drawAttachments();
    }
    else if (m.type === "setInput") {
      input.value = m.text;
      input.focus();
      drawInputChips();
    }
  });
  vscode.postMessage({ type: "ready" });
})();
