"""Probe: the Transcriber's engine as local.yaml runs it (base int8, 1 thread, 4 batches at once, 2 x 30 s chunks
each), RSS growth peak/end and audio s/s, under an allocator env given in the child's environment."""
import json, os, subprocess, sys, threading, time
import numpy as np

def child(rounds: int, lanes: int, size: int) -> None:
    from deployments.config import WhisperModelConfig
    from deployments.transcriber.engines import load_engine
    from deployments.types import ChunkOptions
    from scripts.bench_batch_memory import PeakMemory, batch_items, speech
    whisper = WhisperModelConfig(model="embedded:base", compute_type="int8", cpu_threads=1, parallel_batches=4, max_batch_memory_mb=1_000_000)
    probe = PeakMemory("cpu")
    engine = load_engine(whisper)
    rec = speech(None)
    items = batch_items(rec, 16, 29.0)
    opts = ChunkOptions(language="en", segment_timestamps=False)
    engine.transcribe_batch(items[:1], opts)
    loaded = probe.now_mb()
    def lane(k: int) -> None:
        for r in range(rounds):
            i = (k * size + r * lanes * size) % 16
            engine.transcribe_batch((items * 2)[i:i + size], opts)
    start = time.perf_counter()
    with probe:
        threads = [threading.Thread(target=lane, args=(k,)) for k in range(lanes)]
        [t.start() for t in threads]; [t.join() for t in threads]
    took = time.perf_counter() - start
    time.sleep(1)
    print(json.dumps({"peak": probe.peak_mb - loaded, "end": probe.now_mb() - loaded, "audio_s_per_s": lanes * rounds * size * 29 / took, "took": took}))

if __name__ == "__main__":
    if sys.argv[1] == "child":
        child(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])); sys.exit()
    rounds, lanes, size = (int(x) for x in sys.argv[1].split("x"))
    variants = {"default": {}, "MKL_DISABLE_FAST_MM": {"MKL_DISABLE_FAST_MM": "1"},
                "ARENA2": {"MALLOC_ARENA_MAX": "2"}, "both": {"MKL_DISABLE_FAST_MM": "1", "MALLOC_ARENA_MAX": "2"}}
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(variants)
    for name in names:
        env = {**os.environ, **variants[name]}
        out = subprocess.run([sys.executable, "-m", "scripts._probe_alloc", "child", str(rounds), str(lanes), str(size)], env=env, capture_output=True, text=True)
        line = [l for l in out.stdout.splitlines() if l.startswith("{")]
        print(name, line[-1] if line else out.stderr[-500:], flush=True)
