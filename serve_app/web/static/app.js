// The try-it page: a file or URL in, an async job polled to the end, the transcript shown with speaker
// colours and timestamps that seek the player, and downloads made from the result's segments.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_STORAGE = "stt-api-key";
const SPEAKER_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
let chosenFile = null;
let result = null;

function apiKey() {
  return $("api-key").value.trim();
}

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

async function detailOf(response) {
  try {
    const body = await response.json();
    if (typeof body.detail === "string") return body.detail;
    return body.detail.map((e) => `${e.loc.join(".")}: ${e.msg}`).join("; ");
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${apiKey()}` };
  const response = await fetch(path, { ...options, headers });
  if (!response.ok) throw new Error(await detailOf(response));
  return response.json();
}

function chooseFile(file) {
  chosenFile = file;
  $("file-name").textContent = file ? file.name : "";
  if (file) $("url").value = "";
}

function requestForm() {
  const form = new FormData();
  if (chosenFile) form.append("file", chosenFile, chosenFile.name);
  else form.append("url", $("url").value.trim());
  form.append("response_format", "verbose_json");
  form.append("timestamp_granularities[]", "segment");
  if ($("diarize").checked) form.append("task", "diarize");
  const language = $("language").value.trim();
  if (language) form.append("language", language);
  return form;
}

async function transcribe() {
  if (!apiKey()) return setStatus("Type your API key first.", true);
  if (!chosenFile && !$("url").value.trim()) return setStatus("Choose a file or paste a URL.", true);
  $("transcribe").disabled = true;
  $("progress").hidden = false;
  $("progress").value = 0;
  try {
    setStatus("Uploading…");
    const created = await api("/v1/audio/transcriptions/async", { method: "POST", body: requestForm() });
    setStatus("Transcribing…");
    let job = created;
    while (job.status === "in_progress") {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      job = await api(`/v1/audio/transcriptions/async/${created.job_id}`);
      $("progress").value = job.progress;
    }
    if (job.status === "error") throw new Error(job.error);
    result = job.result;
    show(result);
    setStatus(`Done: ${result.duration.toFixed(1)} s of audio, language ${result.language}.`);
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    $("transcribe").disabled = false;
    $("progress").hidden = true;
  }
}

function clock(seconds, separator = ".") {
  const ms = Math.round(seconds * 1000);
  const pad = (n, width = 2) => String(n).padStart(width, "0");
  const h = Math.floor(ms / 3600000), m = Math.floor(ms / 60000) % 60, s = Math.floor(ms / 1000) % 60;
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
}

function show(transcript) {
  const player = $("player");
  player.src = chosenFile ? URL.createObjectURL(chosenFile) : $("url").value.trim();
  const speakers = (transcript.speakers || []).map((s) => s.id ?? s.speaker ?? s);
  const container = $("transcript");
  container.replaceChildren();
  for (const segment of transcript.segments) {
    const row = document.createElement("p");
    row.className = "segment";
    const time = document.createElement("button");
    time.className = "time";
    time.textContent = clock(segment.start).slice(0, 8);
    time.dataset.start = segment.start;
    time.addEventListener("click", () => {
      player.currentTime = segment.start;
      player.play().catch(() => {});
    });
    row.append(time);
    if (segment.speaker !== undefined) {
      const label = document.createElement("span");
      label.className = "speaker";
      let index = speakers.indexOf(segment.speaker);
      if (index < 0) index = speakers.push(segment.speaker) - 1;
      label.style.background = SPEAKER_COLOURS[index % SPEAKER_COLOURS.length];
      label.textContent = segment.speaker;
      row.append(label);
    }
    row.append(document.createTextNode(segment.text.trim()));
    container.append(row);
  }
  $("output").hidden = false;
  $("download").hidden = false;
}

// ---- live mode: the microphone as 16 kHz s16le frames over the realtime WebSocket (/v1/transcribe) ----

const LIVE_RATE = 16000;
const FRAME_SAMPLES = 1600; // 100 ms
let live = null;

async function startLive() {
  if (!apiKey()) return setStatus("Type your API key first.", true);
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1 } });
  const context = new AudioContext({ sampleRate: LIVE_RATE });
  await context.audioWorklet.addModule("/web/pcm-capture.js");
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams({ encoding: "pcm_s16le", sample_rate: LIVE_RATE, diarize: $("diarize").checked });
  // Browsers cannot send an Authorization header on a WebSocket: the key goes as the second subprotocol.
  const socket = new WebSocket(`${scheme}://${location.host}/v1/transcribe?${query}`, ["bearer", apiKey()]);
  socket.binaryType = "arraybuffer";
  const capture = new AudioWorkletNode(context, "pcm-capture");
  let pending = new Float32Array(0);
  capture.port.onmessage = (event) => {
    const joined = new Float32Array(pending.length + event.data.length);
    joined.set(pending);
    joined.set(event.data, pending.length);
    pending = joined;
    while (pending.length >= FRAME_SAMPLES && socket.readyState === WebSocket.OPEN) {
      const frame = new Int16Array(FRAME_SAMPLES);
      for (let i = 0; i < FRAME_SAMPLES; i++) frame[i] = Math.max(-1, Math.min(1, pending[i])) * 0x7fff;
      socket.send(frame.buffer);
      pending = pending.slice(FRAME_SAMPLES);
    }
  };
  context.createMediaStreamSource(stream).connect(capture);
  live = { stream, context, socket };
  $("transcript").replaceChildren();
  $("output").hidden = false;
  $("player").hidden = true;
  $("download").hidden = true; // a live session's words are on the page; there is no file result
  $("live").textContent = "Stop";
  setStatus("Connecting…");
  socket.onmessage = (event) => onLiveEvent(JSON.parse(event.data));
  socket.onclose = (event) => {
    stopCapture();
    live = null;
    if (event.code !== 1000) setStatus(`The live session ended: ${event.reason || "code " + event.code}`, true);
  };
}

function onLiveEvent(event) {
  if (event.type === "session.created") setStatus("Listening: speak now.");
  else if (event.type === "transcript") {
    for (const word of event.words) {
      const span = document.createElement("span");
      span.className = "word";
      span.textContent = word.text + " ";
      if (word.speaker !== null && word.speaker !== undefined) {
        span.style.color = SPEAKER_COLOURS[word.speaker % SPEAKER_COLOURS.length];
        span.title = `speaker ${word.speaker}`;
      }
      $("transcript").append(span);
    }
  } else if (event.type === "session.ended") {
    setStatus(`Done: ${(event.audio_duration_ms / 1000).toFixed(1)} s of audio.`);
  } else if (event.type === "error") setStatus(event.message, true);
}

function stopCapture() {
  if (!live) return;
  live.stream.getTracks().forEach((track) => track.stop());
  live.context.close();
  $("live").textContent = "Live from the microphone";
  $("player").hidden = false;
}

function toggleLive() {
  if (!live) return startLive().catch((error) => setStatus(error.message, true));
  const { socket } = live;
  stopCapture();
  live = null;
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "input_audio.end" }));
  setStatus("Finishing…");
}

function rendered(format) {
  const cues = result.segments.map((s) => ({ ...s, text: (s.speaker ? `[${s.speaker}] ` : "") + s.text.trim() }));
  if (format === "json") return JSON.stringify(result, null, 2);
  if (format === "txt") return cues.map((c) => c.text).join("\n") + "\n";
  if (format === "srt") {
    return cues.map((c, i) => `${i + 1}\n${clock(c.start, ",")} --> ${clock(c.end, ",")}\n${c.text}\n`).join("\n");
  }
  return "WEBVTT\n\n" + cues.map((c) => `${clock(c.start)} --> ${clock(c.end)}\n${c.text}\n`).join("\n");
}

function download() {
  const format = $("format").value;
  const base = chosenFile ? chosenFile.name.replace(/\.[^.]+$/, "") : "transcript";
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([rendered(format)], { type: "text/plain;charset=utf-8" }));
  link.download = `${base}.${format}`;
  link.click();
}

document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = sessionStorage.getItem(KEY_STORAGE) || "";
  $("api-key").addEventListener("input", () => sessionStorage.setItem(KEY_STORAGE, apiKey()));
  $("file").addEventListener("change", (event) => chooseFile(event.target.files[0] || null));
  $("url").addEventListener("input", () => $("url").value && chooseFile(null));
  const drop = $("drop");
  drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    chooseFile(event.dataTransfer.files[0] || null);
  });
  $("transcribe").addEventListener("click", transcribe);
  $("download").addEventListener("click", download);
  $("live").addEventListener("click", toggleLive);
});
