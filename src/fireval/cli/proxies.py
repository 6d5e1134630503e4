"""``fireval proxies build``: Wray et al. (2021) proxy relevance as graded labels (.npz);
``fireval proxies cache``: the parse cache's size, cap and ``--clear``."""

from pathlib import Path
from typing import Annotated

import typer

from fireval.cli.common import COLLECTION_HELP, DIRECTIONS, HelpGroup, choice, number_in

# options shared by the verbs that compare queries with each video's captions (proxies, labels auto)
QueriesOpt = Annotated[
    str,
    typer.Option(
        "--collection",
        "--queries",
        "-c",
        help=COLLECTION_HELP,
    ),
]
SplitOpt = Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")]
VideoCaptionsOpt = Annotated[
    Path | None,
    typer.Option(
        "--video-captions",
        "--dataset",
        help="Collection file giving each video's captions (e.g. MSR-VTT official JSON; any -c layout).",
    ),
]


def _collections(collection: str, split: Path | None, video_captions: Path | None, cache: bool = False):  # type: ignore[no-untyped-def]
    """Query collection and the collection holding each video's captions (``cache``: the parsed
    video-caption file is kept in the user's cache directory, keyed by its bytes)."""
    from fireval import api

    coll = api.load_collection(collection, split=split)
    if video_captions is not None:
        videos = list(coll.video_ids)  # any layout, restricted to the query videos
        if cache:
            from fireval.formats.collection_cache import cached_collection
            from fireval.proxies.cache import default_cache_dir

            vc = cached_collection(
                video_captions, videos, name=video_captions.stem, cache_dir=default_cache_dir()
            )
            return coll, vc
        from fireval.formats import read_collection

        return coll, read_collection(video_captions, videos, name=video_captions.stem)
    if str(collection) == "example":
        from fireval.formats.example import load_example

        return coll, load_example().video_captions
    return coll, None


def _need_npz(paths: list[Path]) -> None:
    """Proxy relevance is a graded-label .npz: other label files (told by content) get a one-line error."""
    from fireval.core.errors import InputError
    from fireval.formats.textio import LABEL_FORMATS, label_format

    for p in paths:
        kind = label_format(p)
        if kind != "npz":
            raise InputError(
                f"the content is {LABEL_FORMATS[kind]}, not a proxy relevance .npz (from `fireval proxies "
                "build`); give other labels to `fireval evaluate --labels`",
                source=str(p),
            )


def _load_relevances(paths: list[Path]):  # type: ignore[no-untyped-def]
    from fireval.proxies.relevance import load_relevances

    _need_npz(paths)
    return load_relevances(paths)


def _records(df):  # type: ignore[no-untyped-def]
    """JSON-ready records (NaN -> null)."""
    import json

    return json.loads(df.to_json(orient="records", double_precision=15))


def _write(table, json_out: Path | None, tsv: Path | None) -> None:  # type: ignore[no-untyped-def]
    from fireval import api

    if json_out is not None:  # a list of rows, each with its units (docs/formats.md#units)
        unit = "value: expected nDCG@R as a fraction in [0, 1]; n_zero_relevant: queries (an integer)"
        api.write_json([{**r, "units": unit} for r in _records(table)], json_out)
    if tsv is not None:
        api.write_table(table, tsv)


def register(app: typer.Typer) -> None:
    proxies = typer.Typer(
        cls=HelpGroup,
        help="Semantic-similarity proxies (Wray et al. 2021): BoW, PoS, SYN, METEOR.",
        no_args_is_help=True,
    )

    @proxies.command("build")
    def build(
        output: Annotated[
            Path, typer.Option("--output", "-o", help="Output .npz (graded labels + provenance).")
        ],
        proxy: Annotated[str, typer.Option("--proxy", "-p", help="bow | pos | syn | meteor.")] = "bow",
        preset: Annotated[
            str | None,
            typer.Option(
                help="wray2021: Wray et al. as published (surface words, spaCy stop list, words25 for "
                "bow/pos/syn, matching kernel for meteor). Explicit options override it."
            ),
        ] = None,
        agg: Annotated[
            str | None,
            typer.Option(
                help="max | mean over a video's captions, words25 (set proxies) or match ((max+mean)/2, "
                "the matching kernel). Default: max, or the preset's."
            ),
        ] = None,
        words: Annotated[
            str | None, typer.Option(help="surface | lemma (default: lemma, or the preset's).")
        ] = None,
        stop_words: Annotated[
            str | None, typer.Option(help="spacy | glasgow stop list (default: glasgow, or the preset's).")
        ] = None,
        verb_classes: Annotated[
            Path | None, typer.Option(help="syn: verb class CSV (id,key,instances), e.g. EPIC-Kitchens-100.")
        ] = None,
        noun_classes: Annotated[
            Path | None, typer.Option(help="syn: noun class CSV (id,key,instances), e.g. EPIC-Kitchens-100.")
        ] = None,
        collection: QueriesOpt = "example",
        split: SplitOpt = None,
        video_captions: VideoCaptionsOpt = None,
        presence: Annotated[
            float, typer.Option(help="words25: fraction of a video's captions a word must occur in.")
        ] = 0.25,
        jobs: Annotated[int, typer.Option("--jobs", "-j", help="Threads (METEOR).")] = 1,
        nonzero_only: Annotated[
            bool, typer.Option(help="Store only pairs with a grade > 0 (others unjudged).")
        ] = False,
        cache: Annotated[
            bool,
            typer.Option(
                help="Reuse caption analyses and the parsed --video-captions file from the cache "
                "($FIREVAL_CACHE_DIR, else $XDG_CACHE_HOME/fireval or ~/.cache/fireval)."
            ),
        ] = True,
        quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    ) -> None:
        """Build caption x video proxy relevance and save it as graded labels with provenance.

        The file loads with ``fireval evaluate --labels out.npz`` (source ``proxy:<name>``).
        """
        from fireval.proxies import single_blas_thread

        single_blas_thread()  # before numpy's first import: no BLAS here, so no idle BLAS threads
        from fireval.cli.common import guard_outputs
        from fireval.core.errors import FirevalError
        from fireval.proxies.relevance import resolve_options, video_relevance

        if not 0 < presence <= 1:  # also NaN
            raise FirevalError(f"--presence must be a fraction in (0, 1], got {presence}")
        if jobs < 1:
            raise FirevalError(f"--jobs must be >= 1, got {jobs}")

        guard_outputs(
            {"--output": output},
            collection=collection,
            split=split,
            others={
                "--video-captions": video_captions,
                "--verb-classes": verb_classes,
                "--noun-classes": noun_classes,
            },
        )
        p = proxy.lower()
        opts, how = resolve_options(
            p,
            preset,
            agg=agg,
            words=words,
            stop=stop_words,
            verb_classes=verb_classes,
            noun_classes=noun_classes,
        )
        coll, vc = _collections(collection, split, video_captions, cache)
        from fireval.cli.common import progress_bar

        # elapsed time on stderr when it is a terminal, not with -q (METEOR takes a minute)
        with progress_bar(f"building the {p} proxy", disable=quiet):
            from contextlib import nullcontext

            from fireval.proxies.text import TextPipeline, default_parse_cache

            parse_cache = default_parse_cache(cache)
            with parse_cache if parse_cache is not None else nullcontext():  # closing records its reads
                rel = video_relevance(
                    coll,
                    p,
                    how,
                    vc,
                    presence=presence,
                    n_jobs=jobs,
                    options=opts,
                    preset=preset,
                    pipeline=TextPipeline(cache=parse_cache),
                )
        rel.save(output, judge_zeros=not nonzero_only)
        g = rel.grades
        typer.echo(
            f"{rel.source}: {g.shape[0]} captions x {g.shape[1]} videos ({rel.meta['video_captions']}, "
            f"agg={how}, words={opts.words}, stop={opts.stop}); "
            f"mean grade {g.mean():.4f}, pairs > 0: {int((g > 0).sum())}; wrote {output}"
        )

    @proxies.command("random")
    def random_(
        labels: Annotated[
            list[Path] | None,
            typer.Option(
                "--labels", "-l", help="Proxy relevance .npz from 'proxies build' (repeatable); or use -c."
            ),
        ] = None,
        zero_relevant: Annotated[
            str,
            typer.Option(
                callback=choice("--zero-relevant", ("zero", "drop", "nan")),
                help="A query with no relevant item: zero (scores 0, as Falcon et al.'s ranp), drop "
                "(left out) or nan (JPoSE's nDCG.py: the mean is NaN).",
            ),
        ] = "zero",
        collection: Annotated[
            str | None,
            typer.Option(
                "--collection", "-c", help="Without -l: build each design's relevance for this collection."
            ),
        ] = None,
        split: SplitOpt = None,
        video_captions: VideoCaptionsOpt = None,
        proxy: Annotated[
            str, typer.Option("--proxy", "-p", help="With -c: comma-separated bow,pos,syn,meteor.")
        ] = "bow,pos,syn,meteor",
        design: Annotated[
            str,
            typer.Option(
                help="With -c: comma-separated words25 (robust 25% word sets), max, mean (over a video's "
                "captions), match ((max+mean)/2), single (first caption of each video)."
            ),
        ] = "words25,max,mean,single",
        query_captions: Annotated[
            str,
            typer.Option(
                help="With -c: comma-separated given (the collection's captions), first (first caption "
                "of each video), all (every caption of each video), nth:K (the K-th caption of each video)."
            ),
        ] = "given",
        words: Annotated[
            str, typer.Option(help="With -c: surface | lemma (default surface, as wray2021).")
        ] = "surface",
        stop_words: Annotated[
            str, typer.Option(help="With -c: spacy | glasgow (default spacy, as wray2021).")
        ] = "spacy",
        jobs: Annotated[int, typer.Option("--jobs", "-j", help="Threads.")] = 1,
        json_out: Annotated[Path | None, typer.Option("--json", help="Write the table as JSON.")] = None,
        tsv: Annotated[Path | None, typer.Option("--tsv", help="Write the table as TSV.")] = None,
    ) -> None:
        """Exact expected nDCG@R of a uniformly random ranking, per proxy and direction (+ Eq. 3 mean).

        With -l: on built proxy files. With -c: for each proxy x design x query choice
        (docs/proxies.md: which design reaches which number of the published Random row).
        """
        from fireval.cli.common import guard_outputs, split_csv
        from fireval.core.errors import FirevalError
        from fireval.proxies.ndcg import ZERO_RELEVANT, random_table

        z = zero_relevant.strip().lower()
        if z not in ZERO_RELEVANT:
            raise FirevalError(f"--zero-relevant: expected zero, drop or nan, got {zero_relevant!r}")
        if bool(labels) == (collection is not None):
            raise FirevalError("give either -l (built proxy files) or -c (a collection and its designs)")
        if labels:
            guard_outputs({"--json": json_out, "--tsv": tsv}, labels=[str(x) for x in labels])
            rels = _load_relevances(labels)
            table = random_table({k: r.grades for k, r in rels.items()}, z)
            _write(table, json_out, tsv)
            typer.echo(
                f"expected nDCG@R of a random ranking, as a fraction in [0, 1] (zero-relevant queries: {z})"
            )
            for name, part in table.groupby("proxy", sort=False):
                v = dict(zip(part["direction"], part["value"]))
                nz = dict(zip(part["direction"], part["n_zero_relevant"]))
                typer.echo(
                    f"{name}: t2v {v['t2v']:.4f}  v2t {v['v2t']:.4f}  Eq.3 mean {v['mean']:.4f}  "
                    f"(queries with no relevant item: t2v {nz['t2v']}, v2t {nz['v2t']})"
                )
            return
        assert collection is not None
        from fireval.proxies import single_blas_thread

        single_blas_thread()
        if jobs < 1:
            raise FirevalError(f"--jobs must be >= 1, got {jobs}")
        guard_outputs(
            {"--json": json_out, "--tsv": tsv},
            collection=collection,
            split=split,
            others={"--video-captions": video_captions},
        )
        from contextlib import nullcontext

        from fireval.proxies.designs import check_design, random_designs
        from fireval.proxies.text import TextOptions, TextPipeline, default_parse_cache

        ps, ds, qs = (split_csv(x.lower()) for x in (proxy, design, query_captions))
        for p in ps:
            if p not in ("bow", "pos", "syn", "meteor"):
                raise FirevalError(f"--proxy: unknown proxy {p!r}; expected bow, pos, syn or meteor")
            for d in ds:
                for q in qs:
                    check_design("bow" if d == "words25" else p, d, q)
        opts = TextOptions(words.strip().lower(), stop_words.strip().lower())
        coll, vc = _collections(collection, split, video_captions, True)
        typer.echo(
            f"expected nDCG@R of a random ranking, Eq. 3 in % (words={opts.words}, stop={opts.stop}, "
            f"zero-relevant queries: {z}; design words25 is skipped for meteor)"
        )

        def show(r: dict) -> None:
            typer.echo(
                f"{r['proxy']:<6} {r['design']:<8} queries={r['query_captions']:<5} "
                f"{r['n_captions']} x {r['n_videos']}: t2v {100 * r['t2v']:.2f}  v2t {100 * r['v2t']:.2f}  "
                f"Eq.3 {100 * r['mean']:.2f}  (no relevant item: t2v {r['zero_t2v']}, v2t {r['zero_v2t']}; "
                f"pairs > 0: {100 * r['share_positive']:.1f}%)"
            )

        parse_cache = default_parse_cache(True)
        with parse_cache if parse_cache is not None else nullcontext():
            table = random_designs(
                coll,
                vc,
                proxies=ps,
                designs=ds,
                query_captions=qs,
                zero_relevant=z,
                options=opts,
                pipeline=TextPipeline(cache=parse_cache),
                n_jobs=jobs,
                on_row=show,
            )
        _write(table, json_out, tsv)

    @proxies.command("stats")
    def stats(
        labels: Annotated[
            list[Path],
            typer.Option("--labels", "-l", help="Proxy relevance .npz from 'proxies build' (repeatable)."),
        ],
        thresholds: Annotated[
            str, typer.Option(help="Comma-separated relevance thresholds in [0, 1] (0 means > 0).")
        ] = "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
        direction: Annotated[
            str,
            typer.Option(
                "--correlation-direction",
                callback=choice("--correlation-direction", DIRECTIONS, casefold=True),
                help="App. B correlations per v2t (video) or t2v query.",
            ),
        ] = "v2t",
        json_out: Annotated[Path | None, typer.Option("--json", help="Write both tables as JSON.")] = None,
        tsv: Annotated[
            Path | None,
            typer.Option(
                "--tsv", help="Write Fig. 4 data to this TSV and App. B data to <stem>.correlations.tsv."
            ),
        ] = None,
    ) -> None:
        """Wray et al. Fig. 4 (relevant items per query vs threshold) and App. B (Pearson r between proxies)."""
        import pandas as pd

        from fireval import api
        from fireval.cli.common import guard_outputs, split_csv
        from fireval.core.errors import FirevalError
        from fireval.proxies.analysis import correlation_table, threshold_curve

        corr_tsv = None if tsv is None else tsv.with_name(f"{tsv.stem}.correlations.tsv")
        guard_outputs(
            {"--json": json_out, "--tsv": tsv, "--tsv (correlations)": corr_tsv},
            labels=[str(x) for x in labels],
        )
        try:
            ths = [float(x) for x in split_csv(thresholds)]
        except ValueError:
            raise FirevalError(
                f"--thresholds: expected comma-separated numbers, got {thresholds!r}"
            ) from None
        rels = _load_relevances(labels)
        curve = pd.concat(
            [threshold_curve(r.grades, ths, proxy=k) for k, r in rels.items()], ignore_index=True
        )
        corr = correlation_table({k: r.grades for k, r in rels.items()}, direction)
        if json_out is not None:
            api.write_json(
                {
                    "units": "grades, thresholds and shares as fractions in [0, 1]; correlations in [-1, 1]; "
                    "counts: integers",
                    "fig4": _records(curve),
                    "appendix_b": _records(corr),
                },
                json_out,
            )
        if tsv is not None and corr_tsv is not None:
            api.write_table(curve, tsv)
            api.write_table(corr, corr_tsv)
        typer.echo("Fig. 4: relevant items per query (mean / median) by threshold")
        typer.echo(curve.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        if len(corr):
            typer.echo(f"App. B: Pearson r between proxies per {direction} query")
            typer.echo(corr.to_string(index=False, float_format=lambda x: f"{x:.3f}"))

    @proxies.command("ivr")
    def ivr(
        run: Annotated[Path, typer.Argument(help="Score matrix (.npy/.npz, caption x video).")],
        labels: Annotated[
            Path, typer.Option("--labels", "-l", help="Proxy relevance .npz from 'proxies build'.")
        ],
        collection: Annotated[str, typer.Option("--collection", "-c", help=COLLECTION_HELP)] = "example",
        split: SplitOpt = None,
        threshold: Annotated[
            float,
            typer.Option(
                callback=number_in("--threshold", 0.0, 1.0, lo_open=True),
                help="Items with relevance >= threshold, in (0, 1], may each be the instance positive "
                "(besides the instance positive itself).",
            ),
        ] = 1.0,
        instance: Annotated[
            bool,
            typer.Option(
                help="Count the instance positives among the candidates, so every query is bounded "
                "(--no-instance: only queries with an item at the threshold, as before)."
            ),
        ] = True,
    ) -> None:
        """IVR bounds (Wray et al. 2021, section 5.2): lower/upper C@K and geometric mean."""
        from fireval import api
        from fireval.core.errors import FirevalError
        from fireval.proxies.ivr import ivr_bounds
        from fireval.proxies.relevance import ProxyRelevance

        if not 0 < threshold <= 1:  # also NaN
            raise FirevalError(
                f"--threshold must be in (0, 1] (proxy relevance is in [0, 1]), got {threshold}"
            )
        _need_npz([labels])
        coll = api.load_collection(collection, split=split)
        rel = ProxyRelevance.load(labels).aligned(coll)
        inst = None
        if instance:
            import numpy as np

            inst = np.zeros(coll.shape, dtype=bool)
            inst[np.arange(coll.n_captions), coll.caption_video] = True
        res = ivr_bounds(api.load_run(run, coll), rel.grades, threshold=threshold, instance=inst)
        cand = f"{rel.source} >= {threshold:g}" + (" or the instance positive" if instance else "")
        typer.echo(f"IVR bounds, candidates: {cand} (C@K in %, lower - upper)")
        for d, b in res.items():
            cells = "  ".join(f"C@{k} {100 * b.lower[k]:.1f}-{100 * b.upper[k]:.1f}" for k in b.ks)
            typer.echo(
                f"{d}: {cells}  geo {100 * b.geo_lower:.1f}-{100 * b.geo_upper:.1f}  "
                f"(n = {b.n} of {b.n_queries} queries)"
            )

    @proxies.command("show")
    def show(
        caption_id: Annotated[str, typer.Argument(help="The reference caption's id.")],
        labels: Annotated[
            Path | None,
            typer.Option(
                "--labels", "-l", help="Proxy .npz from 'proxies build': its proxy and text options are used."
            ),
        ] = None,
        proxy: Annotated[
            str | None, typer.Option("--proxy", "-p", help="Without -l: bow | pos | syn | meteor.")
        ] = None,
        preset: Annotated[str | None, typer.Option(help="Without -l: wray2021 text options.")] = None,
        collection: QueriesOpt = "example",
        split: SplitOpt = None,
        video_captions: VideoCaptionsOpt = None,
        verb_classes: Annotated[
            Path | None, typer.Option(help="syn: the verb class CSV of the build.")
        ] = None,
        noun_classes: Annotated[
            Path | None, typer.Option(help="syn: the noun class CSV of the build.")
        ] = None,
        top: Annotated[int, typer.Option(help="Captions to print (0: all).")] = 20,
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Write every ranked caption as JSON.")
        ] = None,
    ) -> None:
        """Wray et al. Fig. 3: the other captions ranked by their proxy score against one caption.

        Scores are caption-caption, computed from the proxy's definition with the file's text
        options (a proxy .npz stores caption x video grades, aggregated over each video's captions).
        """
        from fireval.cli.common import guard_outputs
        from fireval.core.errors import FirevalError, InputError
        from fireval.proxies.analysis import caption_ranking
        from fireval.proxies.designs import options_from_meta
        from fireval.proxies.relevance import resolve_options

        if top < 0:
            raise FirevalError(f"--top must be >= 0, got {top}")
        if (labels is None) == (proxy is None):
            raise FirevalError("give -l PROXY.npz or --proxy NAME (one of them)")
        guard_outputs(
            {"--json": json_out},
            collection=collection,
            split=split,
            others={"--labels": labels, "--video-captions": video_captions},
        )
        if labels is not None:
            from fireval.proxies.relevance import ProxyRelevance

            _need_npz([labels])
            meta = ProxyRelevance.load(labels).meta
            p = str(meta.get("proxy", "")).lower()
            if not p:
                raise InputError(
                    "no proxy name in the file's meta (not from `fireval proxies build`)", source=str(labels)
                )
            opts = options_from_meta(meta, verb_classes, noun_classes)
        else:
            assert proxy is not None
            p = proxy.strip().lower()
            opts, _ = resolve_options(p, preset, verb_classes=verb_classes, noun_classes=noun_classes)
        coll, vc = _collections(collection, split, video_captions, True)
        pool = vc if vc is not None else coll
        ref_coll = coll if caption_id in coll.caption_index else pool
        if caption_id not in ref_coll.caption_index:
            raise InputError(f"caption id {caption_id!r} is not in {coll.name!r} or {pool.name!r}")
        ref = ref_coll.captions[ref_coll.caption_index[caption_id]]
        others = [i for i, c in enumerate(pool.caption_ids) if c != caption_id]
        texts = [pool.captions[i] for i in others]
        from fireval.proxies.text import TextPipeline, default_parse_cache

        parse_cache = default_parse_cache(True)
        from contextlib import nullcontext

        with parse_cache if parse_cache is not None else nullcontext():
            order, scores = caption_ranking(ref, texts, p, opts, TextPipeline(cache=parse_cache))
        rows = [
            {
                "rank": r + 1,
                "caption_id": pool.caption_ids[others[i]],
                "video_id": pool.video_ids[int(pool.caption_video[others[i]])],
                "score": float(scores[i]),
                "caption": texts[i],
            }
            for r, i in enumerate(order.tolist())
        ]
        if json_out is not None:
            from fireval import api

            api.write_json(
                {
                    "reference": {"caption_id": caption_id, "caption": ref},
                    "proxy": p,
                    "words": opts.words,
                    "stop": opts.stop,
                    "captions": pool.name,
                    "ranked": rows,
                },
                json_out,
            )
        typer.echo(f"{p} ({opts.words}, stop={opts.stop}) against {caption_id}: {ref!r}")
        typer.echo(f"{len(rows)} other captions of {pool.name}, by decreasing score (ties in file order)")
        for row in rows[: top or None]:
            typer.echo(
                f"{row['rank']:>6}  {row['score']:.4f}  {row['caption_id']}  ({row['video_id']})  {row['caption']}"
            )

    @proxies.command("cache")
    def cache(
        clear: Annotated[
            bool, typer.Option("--clear", help="Delete every cached analysis and blob.")
        ] = False,
        json_out: Annotated[Path | None, typer.Option("--json", help="Write the sizes as JSON.")] = None,
    ) -> None:
        """The parse cache: where it is, its size and its cap on column blobs ($FIREVAL_CACHE_MAX_MB);
        --clear empties it."""
        from fireval.proxies.cache import MAX_MB_ENV, ParseCache

        with ParseCache(version="") as pc:  # stats and clear cover every pipeline version
            if json_out is not None:
                from fireval.cli.common import guard_outputs

                guard_outputs({"--json": json_out}, others={"parse cache": pc.path})
            if clear and pc.path.is_file():
                pc.clear()
            st = pc.stats()
        if json_out is not None:
            from fireval import api

            api.write_json({"units": "sizes in bytes; counts: integers", **st}, json_out)
        mib = 2**20
        typer.echo(f"parse cache: {st['path']}{'' if st['exists'] else ' (not created yet)'}")
        if clear:
            typer.echo("cleared")
        typer.echo(f"  on disk: {st['file_bytes'] / mib:.1f} MiB")
        typer.echo(f"  caption analyses: {st['analyses']}")
        typer.echo(
            f"  column blobs: {st['blobs']}, {st['blob_bytes'] / mib:.1f} MiB of at most "
            f"{st['max_bytes'] / mib:g} MiB (${MAX_MB_ENV}; least recently used evicted first)"
        )

    app.add_typer(proxies, name="proxies")
