"""``fireval proxies build``: Wray et al. (2021) proxy relevance as graded labels (.npz)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# options shared by the verbs that compare queries with each video's captions (proxies, labels auto)
QueriesOpt = Annotated[
    str,
    typer.Option(
        "--collection",
        "--queries",
        "-c",
        help="Query collection: JSFusion CSV, MSR-VTT/MSVD JSON, or 'example'.",
    ),
]
SplitOpt = Annotated[Path | None, typer.Option(help="Split list (MSVD: test_list.txt).")]
VideoCaptionsOpt = Annotated[
    Path | None,
    typer.Option("--video-captions", "--dataset", help="MSR-VTT official JSON giving each video's captions."),
]


def _collections(collection: str, split: Path | None, video_captions: Path | None):  # type: ignore[no-untyped-def]
    """Query collection and the collection holding each video's captions."""
    from fireval import api

    coll = api.load_collection(collection, split=split)
    if video_captions is not None:
        from fireval.formats.msrvtt import read_msrvtt_official

        return coll, read_msrvtt_official(video_captions, coll.video_ids, name=video_captions.stem)
    if str(collection) == "example":
        from fireval.formats.example import load_example

        return coll, load_example().video_captions
    return coll, None


def register(app: typer.Typer) -> None:
    proxies = typer.Typer(
        help="Semantic-similarity proxies (Wray et al. 2021): BoW, PoS, SYN, METEOR.", no_args_is_help=True
    )

    @proxies.command("build")
    def build(
        output: Annotated[
            Path, typer.Option("--output", "-o", help="Output .npz (graded labels + provenance).")
        ],
        proxy: Annotated[str, typer.Option("--proxy", "-p", help="bow | pos | syn | meteor.")] = "bow",
        agg: Annotated[
            str, typer.Option(help="max | mean over a video's captions, or words25 (set proxies).")
        ] = "max",
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
    ) -> None:
        """Build caption x video proxy relevance and save it as graded labels with provenance.

        The file loads with ``fireval evaluate --labels out.npz`` (source ``proxy:<name>``).
        """
        from fireval.proxies.relevance import video_relevance

        coll, vc = _collections(collection, split, video_captions)
        rel = video_relevance(coll, proxy.lower(), agg.lower(), vc, presence=presence, n_jobs=jobs)
        rel.save(output, judge_zeros=not nonzero_only)
        g = rel.grades
        typer.echo(
            f"{rel.source}: {g.shape[0]} captions x {g.shape[1]} videos ({rel.meta['video_captions']}, agg={agg}); "
            f"mean grade {g.mean():.4f}, pairs > 0: {int((g > 0).sum())}; wrote {output}"
        )

    @proxies.command("ivr")
    def ivr(
        run: Annotated[Path, typer.Argument(help="Score matrix (.npy/.npz, caption x video).")],
        labels: Annotated[
            Path, typer.Option("--labels", "-l", help="Proxy relevance .npz from 'proxies build'.")
        ],
        collection: Annotated[
            str, typer.Option("--collection", "-c", help="JSFusion CSV, MSR-VTT/MSVD JSON, or 'example'.")
        ] = "example",
        split: SplitOpt = None,
        threshold: Annotated[
            float, typer.Option(help="Items with relevance >= threshold may be the instance positive.")
        ] = 1.0,
    ) -> None:
        """IVR bounds (Wray et al. 2021, section 5.2): lower/upper C@K and geometric mean."""
        from fireval import api
        from fireval.proxies.ivr import ivr_bounds
        from fireval.proxies.relevance import ProxyRelevance

        coll = api.load_collection(collection, split=split)
        rel = ProxyRelevance.load(labels).aligned(coll)
        res = ivr_bounds(api.load_run(run, coll), rel.grades, threshold=threshold)
        typer.echo(f"IVR bounds, {rel.source} >= {threshold:g} (C@K in %, lower - upper)")
        for d, b in res.items():
            cells = "  ".join(f"C@{k} {100 * b.lower[k]:.1f}-{100 * b.upper[k]:.1f}" for k in b.ks)
            typer.echo(f"{d}: {cells}  geo {100 * b.geo_lower:.1f}-{100 * b.geo_upper:.1f}")

    app.add_typer(proxies, name="proxies")
