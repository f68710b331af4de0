// xconn Web Chat: the browser side. Plain JavaScript, no build step.
// It reads Server-Sent Events (status, message, delta, activity) and posts
// messages (JSON, or multipart when a file is attached).
(function () {
  "use strict";

  var base = document.body.dataset.base || "/webchat";
  var room = document.body.dataset.room || "";
  var query = room ? "?room=" + encodeURIComponent(room) : "";

  var list = document.getElementById("messages");
  var statusEl = document.getElementById("status");
  var activityEl = document.getElementById("activity");
  var form = document.getElementById("composer");
  var textEl = document.getElementById("text");
  var fileEl = document.getElementById("file");
  var sendEl = document.getElementById("send");
  var attachedEl = document.getElementById("attached");
  var errorEl = document.getElementById("error");
  var emptyEl = document.getElementById("empty");

  var ACTIVITY_TIMEOUT_MS = 60000; // temporary activity has a local timeout
  var activityTimer = null;
  var lastSeq = {}; // message_id -> last delta sequence shown
  var previews = {}; // message_id -> local object URL of an image this browser sent
  var finals = {}; // message_id -> last complete message shown

  function bubble(id, from) {
    var li = id ? list.querySelector('li[data-id="' + CSS.escape(id) + '"]') : null;
    if (!li) {
      li = document.createElement("li");
      li.className = "msg " + (from === "user" ? "user" : "assistant");
      if (id) li.dataset.id = id;
      var body = document.createElement("div");
      body.className = "body";
      li.appendChild(body);
      list.appendChild(li);
      emptyEl.hidden = true;
    }
    return li;
  }

  function scrollDown() {
    window.scrollTo(0, document.body.scrollHeight);
  }

  // nearBottom reports whether the reader is at the end of the chat (then
  // new content, and media that finishes loading, keeps it there).
  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120;
  }

  // media makes an image that scrolls the chat down once it has loaded
  // (its height is unknown before) and turns into a note when the file is
  // gone (files expire).
  function media(src, name) {
    var img = document.createElement("img");
    img.alt = name || "image";
    img.className = "inline-image";
    img.addEventListener("load", function () { if (stick) scrollDown(); });
    img.addEventListener("error", function () {
      var note = document.createElement("span");
      note.className = "file-link";
      note.textContent = (name || "image") + " (no longer available)";
      var parent = img.parentNode;
      if (parent && parent.tagName === "A") parent.replaceWith(note); else img.replaceWith(note);
    });
    img.src = src;
    return img;
  }

  var stick = true; // the reader follows the end of the chat
  window.addEventListener("scroll", function () { stick = nearBottom(); }, { passive: true });

  function renderFiles(li, files, id) {
    var old = li.querySelector(".files");
    if (old) old.remove();
    if (!files || !files.length) return;
    var box = document.createElement("div");
    box.className = "files";
    files.forEach(function (f) {
      if (!f.url) { // a file a user sent: shown by name, or by the local preview
        if (f.type === "image" && previews[id]) {
          box.appendChild(media(previews[id], f.filename));
        } else {
          var chip = document.createElement("span");
          chip.className = "file-link";
          chip.textContent = "Attached: " + (f.filename || "file");
          box.appendChild(chip);
        }
        return;
      }
      var url = f.url + (f.url.indexOf("?") < 0 ? query : "");
      var a = document.createElement("a");
      a.href = url;
      a.target = "_blank";
      a.rel = "noopener";
      if (f.type === "image") {
        a.appendChild(media(url, f.filename));
      } else {
        a.textContent = "Download " + (f.filename || "file");
        a.className = "file-link";
      }
      box.appendChild(a);
    });
    li.appendChild(box);
  }

  function onMessage(m) {
    var li = bubble(m.message_id, m.from);
    li.classList.remove("streaming");
    li.classList.add("final");
    li.querySelector(".body").textContent = m.text || "";
    renderFiles(li, m.files, m.message_id);
    finals[m.message_id] = m;
    delete lastSeq[m.message_id];
    if (m.from === "assistant") setActivity(null);
    if (stick || m.from === "user") scrollDown();
  }

  function onDelta(d) {
    var li = bubble(d.message_id, "assistant");
    if (li.classList.contains("final")) return; // the final already replaced the deltas
    var seen = lastSeq[d.message_id] || 0;
    if (d.sequence <= seen) return; // a retransmission: never append twice
    lastSeq[d.message_id] = d.sequence;
    li.classList.add("streaming");
    li.querySelector(".body").textContent += d.text;
    setActivity(null); // visible text clears the temporary activity
    if (stick) scrollDown();
  }

  function setActivity(a) {
    if (activityTimer) { clearTimeout(activityTimer); activityTimer = null; }
    if (!a || a.status === "idle") { activityEl.hidden = true; activityEl.textContent = ""; return; }
    activityEl.textContent = a.status === "tool" ? "using " + a.tool_name + "…" : "thinking…";
    activityEl.hidden = false;
    activityTimer = setTimeout(function () { setActivity(null); }, ACTIVITY_TIMEOUT_MS);
  }

  // The status sits in the page's header, in view at every size: the
  // chat's state as the connector reports it, or "reconnecting…" from the
  // moment the event stream drops.
  var SIGNED_OUT = "This chat is signed out. Sign in again: scan a new QR code (xconn demo --signin prints one) or enter the room's access code.";
  var finished = false; // signed out or replaced: no more reconnecting

  function setStatus(s) {
    statusEl.dataset.state = s.state;
    statusEl.textContent = s.state === "connected" ? "connected" : (s.detail || s.state);
    if (s.state === "signed_out") {
      showError(SIGNED_OUT);
      finish();
    } else if (s.state === "replaced") {
      showError("");
      var a = document.createElement("a");
      a.href = window.location.pathname;
      a.textContent = "Reload to open the new chat.";
      statusEl.appendChild(document.createTextNode(" "));
      statusEl.appendChild(a);
      finish();
    }
  }

  function reconnecting() {
    if (!finished) setStatus({ state: "reconnecting", detail: "reconnecting…" });
  }

  function finish() {
    finished = true;
    if (es) es.close();
  }

  function showError(text) {
    errorEl.textContent = text;
    errorEl.hidden = !text;
  }

  function parse(ev) {
    try { return JSON.parse(ev.data); } catch (e) { return null; }
  }

  // The event stream. The connector sends a ping every 20 s: a stream
  // silent for STALE_MS has died without closing (a sleeping laptop, a
  // proxy) and is opened anew.
  var STALE_MS = 50000;
  var es = null;
  var lastEvent = Date.now();

  function on(type, handle) {
    es.addEventListener(type, function (ev) {
      lastEvent = Date.now();
      var d = parse(ev);
      if (d && handle) handle(d);
    });
  }

  function connect() {
    es = new EventSource(base + "/api/events" + query);
    lastEvent = Date.now();
    on("status", setStatus);
    on("message", onMessage);
    on("delta", onDelta);
    on("activity", setActivity);
    on("ping", null);
    es.onerror = function () {
      if (finished) return;
      reconnecting(); // from this moment: the browser opens the stream again by itself
      if (es.readyState === EventSource.CLOSED) refused();
    };
    es.onopen = function () { lastEvent = Date.now(); showError(""); };
  }

  // refused asks why the server refused the stream (the browser gives up
  // on an error status): a chat that is not signed in (401, 410) says so;
  // anything else (a server stopping, 503) is tried again in a moment.
  function refused() {
    var ctl = new AbortController();
    fetch(base + "/api/events" + query, { credentials: "same-origin", signal: ctl.signal }).then(function (res) {
      ctl.abort();
      if (res.status === 401 || res.status === 410) {
        setStatus({ state: "signed_out", detail: "signed out" });
        return;
      }
      setTimeout(function () { if (!finished) connect(); }, 2000);
    }).catch(function () {
      setTimeout(function () { if (!finished) connect(); }, 2000);
    });
  }

  connect();
  setInterval(function () {
    if (!finished && Date.now() - lastEvent > STALE_MS) {
      es.close();
      reconnecting();
      connect();
    }
  }, 5000);

  fileEl.addEventListener("change", function () {
    var f = fileEl.files[0];
    attachedEl.textContent = f ? "Attached: " + f.name : "";
    attachedEl.hidden = !f;
  });

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var text = textEl.value.trim();
    var file = fileEl.files[0];
    if (!text && !file) return;
    var init = { method: "POST", credentials: "same-origin" };
    if (file) {
      var fd = new FormData();
      fd.append("text", text);
      fd.append("file", file, file.name);
      init.body = fd;
    } else {
      init.headers = { "Content-Type": "application/json" };
      init.body = JSON.stringify({ text: text });
    }
    sendEl.disabled = true;
    showError("");
    fetch(base + "/api/messages" + query, init).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (body) {
        if (res.status === 202) {
          if (file && file.type.indexOf("image/") === 0 && body.message_id) {
            previews[body.message_id] = URL.createObjectURL(file);
            var m = finals[body.message_id];
            if (m) renderFiles(bubble(m.message_id, m.from), m.files, m.message_id);
          }
          textEl.value = "";
          fileEl.value = "";
          attachedEl.hidden = true;
          return;
        }
        if (res.status === 401 || res.status === 410) {
          showError(SIGNED_OUT);
          return;
        }
        showError(body.error || ("Sending failed (" + res.status + ")."));
      });
    }).catch(function () {
      reconnecting();
      showError("Sending failed: no connection.");
    }).finally(function () {
      sendEl.disabled = false;
      textEl.focus();
    });
  });

  textEl.focus();
})();
