"use strict";
(function () {
  const data = JSON.parse(document.getElementById("player-data").textContent);
  const frames = data.frames;
  const img = document.getElementById("frame");
  const slider = document.getElementById("slider");
  const play = document.getElementById("play");
  const when = document.getElementById("when");
  const message = document.getElementById("message");
  // Seconds between this browser's clock and the server's, so expiry and "ago" use its time.
  const skew = Date.now() / 1000 - data.now;
  const stepMs = data.range === "30d" ? 900 : 350;
  const preloaded = new Map();
  let index = frames.length - 1;
  let timer = null;
  let expired = false;
  const timeFormat = new Intl.DateTimeFormat(undefined, {
    timeZone: data.timezone, month: "short", day: "numeric", hour: "2-digit",
    minute: "2-digit", timeZoneName: "short"});

  function serverNow() { return Date.now() / 1000 - skew; }

  function relative(t) {
    const s = Math.max(0, serverNow() - t);
    if (s < 60) return "just now";
    if (s < 3600) return Math.floor(s / 60) + " min ago";
    if (s < 48 * 3600) return Math.floor(s / 3600) + " h ago";
    return Math.floor(s / 86400) + " d ago";
  }

  function say(text) {
    message.textContent = text;
    message.hidden = !text;
  }

  function preload(from, count) {
    for (let k = 1; k <= count && frames.length; k++) {
      const frame = frames[(from + k) % frames.length];
      if (!preloaded.has(frame.url)) {
        const image = new Image();
        image.decoding = "async";
        image.src = frame.url;
        preloaded.set(frame.url, image);
      }
    }
  }

  function label() {
    if (!frames.length) return;
    const t = frames[index].t;
    const ago = relative(t);
    const at = timeFormat.format(new Date(t * 1000));
    when.replaceChildren(ago);
    const small = document.createElement("span");
    small.className = "time";
    small.textContent = at;
    when.append(small);
    slider.setAttribute("aria-valuetext", ago + ", " + at);
  }

  function show(i) {
    if (!frames.length || expired) return;
    index = (i + frames.length) % frames.length;
    img.src = frames[index].url;
    img.alt = data.name + ", " + timeFormat.format(new Date(frames[index].t * 1000));
    slider.value = String(index);
    label();
    preload(index, timer ? 4 : 2);
  }

  function setPlaying(on) {
    if (on && (expired || frames.length < 2)) return;
    if (on && !timer) {
      if (index === frames.length - 1) show(0);
      timer = setInterval(() => show(index + 1), stepMs);
    } else if (!on && timer) {
      clearInterval(timer);
      timer = null;
    }
    play.textContent = timer ? "\u275A\u275A" : "\u25B6";
    play.setAttribute("aria-label", timer ? "Pause" : "Play");
    play.setAttribute("aria-pressed", timer ? "true" : "false");
  }

  function expire() {
    expired = true;
    setPlaying(false);
    play.disabled = true;
    slider.disabled = true;
    say("This player link has expired. Reload the page that shows this player to get a " +
        "fresh one.");
  }

  play.addEventListener("click", () => setPlaying(!timer));
  slider.addEventListener("input", () => { setPlaying(false); show(Number(slider.value)); });
  img.addEventListener("error", () => {
    if (serverNow() >= data.expires) expire();
    else say("This snapshot could not be loaded.");
  });
  img.addEventListener("load", () => { if (!expired) say(""); });
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const onSlider = event.target === slider;
    const onButton = event.target === play;
    if (event.key === "k" || event.key === "K" || (event.key === " " && !onButton)) {
      event.preventDefault();
      setPlaying(!timer);
    } else if (!onSlider && (event.key === "ArrowRight" || event.key === "ArrowLeft")) {
      event.preventDefault();
      setPlaying(false);
      show(index + (event.key === "ArrowRight" ? 1 : -1));
    } else if (!onSlider && (event.key === "Home" || event.key === "End")) {
      event.preventDefault();
      setPlaying(false);
      show(event.key === "Home" ? 0 : frames.length - 1);
    }
  });

  slider.max = String(Math.max(0, frames.length - 1));
  if (!frames.length) {
    play.disabled = true;
    slider.disabled = true;
    say(data.range === "30d" ? "No snapshots in the last 30 days." :
        "No snapshots in the last 24 hours.");
  } else {
    show(index);
  }
  const left = (data.expires - serverNow()) * 1000;
  if (left <= 0) expire();
  else setTimeout(expire, Math.min(left, 2147483647));
  setInterval(label, 30000);
})();
