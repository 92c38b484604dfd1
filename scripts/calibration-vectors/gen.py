"""Reference vectors for the `calibration` crate, from independent implementations.

scikit-learn: brier_score_loss, log_loss, cohen_kappa_score (unweighted, linear,
quadratic). scipy: chi2.sf, special.gammaincc / gammainc. numpy (written here, following
the textbook formulas, not the Rust code): Murphy decomposition grouped by distinct
forecast and with 10 fixed bins (with the within-bin terms), ECE, reliability table, the
exact and clipped log score, Krippendorff's alpha (pairwise form, not the coincidence
matrix the Rust code uses).

Usage (outside the repository's tree for the venv):
    python3 -m venv /work/scratch/venv
    /work/scratch/venv/bin/pip install -r scripts/calibration-vectors/requirements.txt
    /work/scratch/venv/bin/python scripts/calibration-vectors/gen.py \
        > calibration/tests/vectors/reference.json

Deterministic: a fixed numpy seed.
"""

import json
import sys

import numpy as np
import scipy
import sklearn
from scipy import special, stats
from sklearn.metrics import brier_score_loss, cohen_kappa_score, log_loss

RNG = np.random.default_rng(20261130)
BINS = 10
EDGES = np.arange(BINS + 1) / BINS  # k/10 as doubles, the crate's documented edges


def bin_of(p):
    # bin k = [k/10, (k+1)/10), 1.0 in the last bin
    k = np.searchsorted(EDGES, p, side="right") - 1
    return np.minimum(k, BINS - 1)


def murphy_grouped(f, o):
    base = o.mean()
    rel = res = 0.0
    for v in np.unique(f):
        m = f == v
        n_k = m.sum()
        obar = o[m].mean()
        rel += n_k * (v - obar) ** 2
        res += n_k * (obar - base) ** 2
    n = len(f)
    return {"reliability": rel / n, "resolution": res / n, "uncertainty": base * (1 - base)}


def murphy_binned(f, o):
    n = len(f)
    base = o.mean()
    b = bin_of(f)
    rel = res = wbv = wbc = 0.0
    table = []
    ece = 0.0
    for k in range(BINS):
        m = b == k
        n_k = int(m.sum())
        if n_k == 0:
            table.append({"bin": k, "count": 0, "mean_forecast": None, "observed_frequency": None})
            continue
        fbar = f[m].mean()
        obar = o[m].mean()
        rel += n_k * (fbar - obar) ** 2
        res += n_k * (obar - base) ** 2
        wbv += ((f[m] - fbar) ** 2).sum()
        wbc += ((f[m] - fbar) * (o[m] - obar)).sum()
        ece += n_k / n * abs(obar - fbar)
        table.append({"bin": k, "count": n_k, "mean_forecast": fbar, "observed_frequency": obar})
    binned = {
        "reliability": rel / n,
        "resolution": res / n,
        "uncertainty": base * (1 - base),
        "within_bin_variance": wbv / n,
        "within_bin_covariance": 2 * wbc / n,
    }
    return binned, ece, table


def exact_log(f, o):
    given = np.where(o == 1, f, 1 - f)
    if (given <= 0).any():
        return None
    return float(-np.log(given).mean())


def clipped_log(f, o, eps):
    fc = np.clip(f, eps, 1 - eps)
    given = np.where(o == 1, fc, 1 - fc)
    return float(-np.log(given).mean())


def binary_cases():
    cases = []
    specs = [
        ("uniform-200", lambda n: RNG.uniform(0, 1, n), 200),
        ("rounded-tenths-300", lambda n: np.round(RNG.uniform(0, 1, n), 1), 300),
        ("rounded-hundredths-500", lambda n: np.round(RNG.beta(2, 3, n), 2), 500),
        ("overconfident-150", lambda n: np.clip(RNG.normal(0.5, 0.4, n), 0.001, 0.999), 150),
        ("small-7", lambda n: np.array([0.05, 0.1, 0.3, 0.3, 0.7, 0.95, 0.999]), 7),
    ]
    for name, gen, n in specs:
        f = gen(n).astype(float)
        # outcomes drawn from a distorted truth so reliability is not zero
        o = (RNG.uniform(0, 1, n) < np.clip(0.15 + 0.7 * f, 0, 1)).astype(int)
        if o.min() == o.max():
            o[0] = 1 - o[0]
        binned, ece, table = murphy_binned(f, o)
        case = {
            "name": name,
            "forecasts": f.tolist(),
            "outcomes": o.tolist(),
            "brier": float(brier_score_loss(o, f)),
            "murphy": murphy_grouped(f, o),
            "murphy_binned": binned,
            "ece": ece,
            "reliability_table": table,
            "log_loss_exact": exact_log(f, o),
            "log_loss_clipped_0.01": clipped_log(f, o, 0.01),
        }
        if ((f > 0) & (f < 1)).all():
            case["log_loss_sklearn"] = float(log_loss(o, f, labels=[0, 1]))
        cases.append(case)
    # Edge values: every bin edge, certain forecasts (exact log score infinite -> null).
    f = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 0.0, 0.35])
    o = np.array([0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1])
    binned, ece, table = murphy_binned(f, o)
    cases.append({
        "name": "bin-edges-and-certainty",
        "forecasts": f.tolist(),
        "outcomes": o.tolist(),
        "brier": float(brier_score_loss(o, f)),
        "murphy": murphy_grouped(f, o),
        "murphy_binned": binned,
        "ece": ece,
        "reliability_table": table,
        "log_loss_exact": exact_log(f, o),
        "log_loss_clipped_0.01": clipped_log(f, o, 0.01),
    })
    return cases


def gamma_cases():
    out = []
    for a in [0.5, 1.0, 1.5, 2.0, 2.5, 4.0, 10.0, 50.0]:
        for x in [1e-300, 1e-12, 1e-6, 1e-3, 0.005, 0.05, 0.5, 1.0, 1.5, 2.4999, 2.5, 3.0,
                  7.0, 15.0, 23.0, 40.0, 80.0, 200.0]:
            out.append({"a": a, "x": x, "q": float(special.gammaincc(a, x)),
                        "p": float(special.gammainc(a, x))})
    return out


def chi2_cases():
    out = []
    for df in [1, 2, 3, 4, 5, 7]:
        for x in [1e-12, 1e-4, 0.001, 0.01, 0.1, 0.2465, 1.0, 2.1072, 6.2248, 7.815, 15.97,
                  46.05, 100.0, 300.0]:
            out.append({"x": x, "df": df, "sf": float(stats.chi2.sf(x, df))})
    return out


def calibration_count_cases():
    p = np.array([0.05, 0.45, 0.45, 0.05])
    out = []
    fixed = [[1, 9, 9, 1], [0, 5, 5, 0], [2, 3, 3, 2], [0, 10, 0, 0], [5, 0, 0, 5],
             [1, 4, 5, 0], [0, 1, 0, 0], [3, 7, 8, 2], [0, 0, 0, 12], [1, 1, 1, 1]]
    for _ in range(20):
        fixed.append(RNG.integers(0, 8, 4).tolist())
    for counts in fixed:
        c = np.array(counts, dtype=float)
        if c.sum() == 0:
            continue
        n = c.sum()
        for n_eff in sorted({int(n), max(1, int(n) - 2)}):
            s = c / c.sum()
            m = s > 0
            info = float((s[m] * np.log(s[m] / p[m])).sum())
            stat = max(0.0, 2 * n_eff * info)
            out.append({"counts": [int(x) for x in counts], "n": n_eff,
                        "calibration": float(stats.chi2.sf(stat, 3))})
    return out


def kappa_cases():
    out = []
    for k, n in [(2, 50), (3, 80), (4, 40), (5, 120), (5, 9)]:
        a = RNG.integers(0, k, n)
        noise = RNG.integers(-1, 2, n)
        b = np.clip(a + noise * (RNG.uniform(0, 1, n) < 0.5), 0, k - 1)
        case = {"categories": k, "a": a.tolist(), "b": b.tolist()}
        for w, key in [(None, "unweighted"), ("linear", "linear"), ("quadratic", "quadratic")]:
            case[key] = float(cohen_kappa_score(a, b, labels=list(range(k)), weights=w))
        out.append(case)
    return out


def delta2(metric, c, k, values, counts):
    if c == k:
        return 0.0
    if metric == "nominal":
        return 1.0
    if metric == "interval":
        return (c - k) ** 2
    if metric == "ratio":
        return ((c - k) / (c + k)) ** 2
    # ordinal: ranks through the marginal counts of pairable values
    lo, hi = min(c, k), max(c, k)
    between = sum(counts[v] for v in values if lo <= v <= hi)
    return (between - (counts[c] + counts[k]) / 2.0) ** 2


def krippendorff(data, metric):
    # data[coder][unit], None = missing. Pairwise form of Krippendorff (2011).
    units = list(zip(*data))
    pairable = [[v for v in u if v is not None] for u in units]
    pairable = [u for u in pairable if len(u) >= 2]
    allv = [v for u in pairable for v in u]
    n = len(allv)
    values = sorted(set(allv))
    counts = {v: allv.count(v) for v in values}
    do = 0.0
    for u in pairable:
        m = len(u)
        s = sum(delta2(metric, u[i], u[j], values, counts)
                for i in range(m) for j in range(m) if i != j)
        do += s / (m - 1)
    do /= n
    de = 0.0
    for c in values:
        for k in values:
            de += counts[c] * counts[k] * delta2(metric, c, k, values, counts)
    de /= n * (n - 1)
    return 1.0 - do / de


def krippendorff_cases():
    out = []
    for coders, units, levels, missing in [(3, 20, 4, 0.1), (4, 30, 5, 0.2), (2, 50, 3, 0.0),
                                           (5, 15, 4, 0.3)]:
        truth = RNG.integers(1, levels + 1, units)
        data = []
        for _ in range(coders):
            row = []
            for t in truth:
                if RNG.uniform() < missing:
                    row.append(None)
                else:
                    v = int(np.clip(t + RNG.integers(-1, 2) * (RNG.uniform() < 0.4), 1, levels))
                    row.append(float(v))
            data.append(row)
        case = {"data": data}
        for metric in ["nominal", "ordinal", "interval", "ratio"]:
            case[metric] = krippendorff(data, metric)
        out.append(case)
    return out


def main():
    out = {
        "generator": "scripts/calibration-vectors/gen.py",
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__,
                     "scikit-learn": sklearn.__version__, "python": sys.version.split()[0]},
        "binary": binary_cases(),
        "gamma": gamma_cases(),
        "chi2": chi2_cases(),
        "calibration_counts": calibration_count_cases(),
        "kappa": kappa_cases(),
        "krippendorff": krippendorff_cases(),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
