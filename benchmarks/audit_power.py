"""Power of the privacy audits: how often each row refutes its negative controls, and how
often an honest row is (wrongly) refuted, over repeated runs with fresh noise.

    python benchmarks/audit_power.py --repeats 5 [--only dpkps-independent,augpe]
        [--variants none,half-noise] [--out F] [--check]

Prints a Markdown table (rows × variants: refuted / repeats, and the mean ε lower bound)
for docs/reliability.md. One green run of a statistical test says little; the rates say
how often the audit catches each mistake at the default sample sizes.

``--repeats 1 --check`` is the full audit table as a pass/fail check (CI runs a subset:
tests/test_audit.py): exit status 1 when an honest row is refuted (judged at 99.99 %,
as a table of many rows would otherwise raise false alarms by design) or a negative
control is not.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from dptext.audits import AUDITS, run_audits
from dptext.privacy.auditing import BROKEN_VARIANTS
from harness.options import add_list, study_parser


def main(argv: list[str] | None = None) -> int:
    ap = study_parser(__doc__, write=False,
                      check="exit 1 if an honest row is refuted or a broken one is not")
    ap.add_argument("--repeats", type=int, default=5)
    add_list(ap, "--only", default=AUDITS)
    add_list(ap, "--variants", default=BROKEN_VARIANTS)
    ap.add_argument("--runs", type=float, default=1.0, help="sample-size multiplier")
    ap.add_argument("--out", help="write the raw rows as JSON here")
    args = ap.parse_args(argv)
    which, variants = args.only, args.variants
    results: dict[str, dict[str, list[dict]]] = {w: {} for w in which}
    started = time.perf_counter()
    for name in which:
        for variant in variants:
            rows = []
            for _ in range(args.repeats):
                confidence = 0.9999 if args.check and variant == "none" else 0.95
                rows.append(run_audits([name], scale=args.runs, broken=variant,
                                       confidence=confidence)[0].to_dict())
            results[name][variant] = rows
            print(f"{name:20s} {variant:11s} refuted {sum(r['violation'] for r in rows)}/"
                  f"{len(rows)}, mean ε lower bound "
                  f"{np.mean([r['epsilon_lower_bound'] for r in rows]):.3f} (claimed "
                  f"{rows[0]['claimed_epsilon']:.3g})  ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr, flush=True)
    print(f"\n`python benchmarks/audit_power.py --repeats {args.repeats}"
          + (f" --runs {args.runs:g}" if args.runs != 1 else "") + "`\n")
    print("| audit | claimed ε | " + " | ".join(f"{v}: refuted | ε lower bound (mean)"
                                              for v in variants) + " |")
    print("|---|---|" + "---|---|" * len(variants))
    for name in which:
        cells = [name, f"{results[name][variants[0]][0]['claimed_epsilon']:.3g}"]
        for variant in variants:
            rows = results[name][variant]
            cells += [f"{sum(r['violation'] for r in rows)}/{len(rows)}",
                      f"{np.mean([r['epsilon_lower_bound'] for r in rows]):.3f}"]
        print("| " + " | ".join(cells) + " |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2)
    wrong = [f"{name} ({variant})" for name in which for variant in variants
             for r in results[name][variant] if r["violation"] != (variant != "none")]
    if args.check and wrong:
        print(f"failed: {', '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
