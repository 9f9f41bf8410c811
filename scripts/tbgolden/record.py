#!/usr/bin/env python3
"""Records stock TensorBoard's HTTP answers on the shared corpus as goldens.

Usage:
  scripts/tbgolden/record.py --tensorboard CHECKOUT [--logdir ../shared/corpus]
      [--out frontend-api/httpapi/testdata/tensorboard]

CHECKOUT is a clone of TensorBoard's public repository (the folder holding
tensorboard/). Its Python backend runs without a build: the .proto files are
compiled with protoc into a temporary copy, the web bundle is replaced by an
empty assets zip, and every request goes straight to the WSGI application
(no socket). Needs protoc and Debian's python3-protobuf, python3-numpy,
python3-werkzeug, python3-markdown, python3-bleach, python3-grpcio,
python3-grpc-tools, python3-absl, python3-packaging and python3-pil.

It asks TensorBoard every route its frontend calls, for every run and tag
of every plugin (found from TensorBoard's own tags routes), with both POST
encodings where the frontend posts forms, and writes one JSON file per
plugin to OUT: a list of {"name", "method", "path", "form" | "json",
"encoding", "status", "content_type", "body"}. A JSON body is kept parsed;
binary bodies (images, audio, mesh data) as {"sha256", "bytes"}; text as a
string. TestTensorBoardGoldens (frontend-api/httpapi/golden) asks tbhub the
same questions and compares: end to end in services/allinone/readpath, and
in frontend-api/httpapi over the services' recorded answers (rerecord them
with services/allinone/readpath's test and -update after changing these).

TensorBoard is run with every plugin's samples_per_plugin above the longest
series of the corpus and without purging orphaned data, so it keeps every
point; tbhub is run with the same samples_per_plugin. The comparison then
applies tbhub's documented data model (docs/http-api.md) to TensorBoard's
answers: last write wins per step, points sorted by step.
"""

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile

# Above the longest series of the corpus, for every plugin in it, so that
# neither TensorBoard nor tbhub drops a point. The Go test uses the same.
SAMPLES = 100000
PLUGINS = [
    "scalars", "histograms", "images", "audio", "text", "pr_curves", "mesh",
    "hparams", "custom_scalars", "graphs", "graph_keras_model",
    "graph_run_metadata", "graph_run_metadata_graph", "graph_tagged_run_metadata",
    "graph_profile", "tensors",
]


def samples_flag():
    return ",".join("%s=%d" % (p, SAMPLES) for p in PLUGINS)


def load_tensorboard(checkout):
    """Imports TensorBoard from a temporary copy with its protos compiled."""
    tmp = tempfile.mkdtemp(prefix="tbgolden")
    shutil.copytree(os.path.join(checkout, "tensorboard"), os.path.join(tmp, "tensorboard"))
    protos = []
    for root, _, files in os.walk(os.path.join(tmp, "tensorboard")):
        protos += [os.path.relpath(os.path.join(root, f), tmp) for f in files if f.endswith(".proto")]
    subprocess.run(["protoc", "--python_out=."] + sorted(protos), cwd=tmp, check=True)
    # The gRPC stubs program.py imports (the gRPC data provider, unused here).
    grpc_protos = [p for p in protos if p.endswith("data_provider.proto")]
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I.", "--grpc_python_out=."] + grpc_protos, cwd=tmp, check=True)
    sys.path.insert(0, tmp)
    return tmp


def empty_assets():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("index.html", "<!doctype html>")
    data = buf.getvalue()
    return lambda: io.BytesIO(data)


class Recorder:
    def __init__(self, client):
        self.client = client
        self.files = {}

    def ask(self, group, name, method, path, query=None, form=None, body_json=None):
        """Asks TensorBoard one question and records the answer under group.

        A form is posted in both encodings the frontend may use; both must
        get the same answer, which is recorded once.
        """
        if form is None:
            entry = self.answer(name, method, path, query, None, None, body_json)
        else:
            entry = self.answer(name, method, path, query, form, "multipart", None)
            other = self.answer(name, method, path, query, form, "urlencoded", None)
            if other["status"] != entry["status"] or other["body"] != entry["body"]:
                sys.exit("%s %s: the two POST encodings got different answers" % (method, path))
            entry["encodings"] = ["multipart", "urlencoded"]
        self.files.setdefault(group, []).append(entry)
        return entry

    def answer(self, name, method, path, query, form, encoding, body_json):
        url = "/data/" + path
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        kwargs = {}
        if encoding == "multipart":
            from werkzeug.datastructures import MultiDict
            kwargs["data"] = MultiDict(form)
            kwargs["content_type"] = "multipart/form-data"
        elif encoding == "urlencoded":
            kwargs["data"] = urllib.parse.urlencode(form, doseq=True)
            kwargs["content_type"] = "application/x-www-form-urlencoded"
        if body_json is not None:
            kwargs["data"] = json.dumps(body_json)
            kwargs["content_type"] = "application/json"
        entry = {"name": name, "method": method, "path": path, "query": [[k, v] for k, v in (query or [])]}
        if form is not None:
            entry["form"] = [[k, v] for k, v in form]
        if body_json is not None:
            entry["json"] = body_json
        try:
            resp = self.client.open(url, method=method, **kwargs)
        except Exception as e:  # a WSGI server answers an uncaught exception with 500
            entry.update(status=500, content_type="", body="uncaught %s" % type(e).__name__)
            return entry
        data = resp.get_data()
        ctype = resp.headers.get("Content-Type", "")
        entry.update(status=resp.status_code, content_type=ctype)
        if resp.headers.get("Content-Encoding") == "gzip":
            import gzip
            data = gzip.decompress(data)
        if ctype.startswith("application/json"):
            entry["body"] = json.loads(data.decode("utf-8"))
        elif ctype.startswith("text/") or resp.status_code != 200:
            entry["body"] = data.decode("utf-8", "replace")
        else:
            entry["body"] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
        return entry

    def write(self, out):
        """Writes one gzipped JSON Lines file per group (zcat reads them)."""
        import gzip
        os.makedirs(out, exist_ok=True)
        for group, entries in sorted(self.files.items()):
            lines = "".join(json.dumps(e, sort_keys=True, ensure_ascii=False) + "\n" for e in entries)
            # mtime=0: the same answers give the same bytes.
            with open(os.path.join(out, group + ".jsonl.gz"), "wb") as f:
                f.write(gzip.compress(lines.encode("utf-8"), mtime=0))


def query_of(q):
    """The parameters of a query string such as TensorBoard's "blob_key=..."."""
    return urllib.parse.parse_qsl(q, keep_blank_values=True)


def record(rec):
    p = "plugin/"
    # Core.
    for route in ["environment", "plugins_listing", "runs", "logdir", "window_properties",
                  "experiments", "experiment_runs", "notifications"]:
        rec.ask("core", route, "GET", route)

    # Scalars.
    tags = rec.ask("scalars", "tags", "GET", p + "scalars/tags")["body"]
    runs_of = {}
    for run, ts in sorted(tags.items()):
        for tag in sorted(ts):
            runs_of.setdefault(tag, []).append(run)
            rec.ask("scalars", "scalars", "GET", p + "scalars/scalars", [("run", run), ("tag", tag)])
            rec.ask("scalars", "scalars_csv", "GET", p + "scalars/scalars", [("run", run), ("tag", tag), ("format", "csv")])
    for tag, runs in sorted(runs_of.items()):
        form = [("tag", tag)] + [("runs", r) for r in runs]
        rec.ask("scalars_multirun", "scalars_multirun", "POST", p + "scalars/scalars_multirun", form=form)

    # Histograms and distributions.
    tags = rec.ask("histograms", "tags", "GET", p + "histograms/tags")["body"]
    for run, ts in sorted(tags.items()):
        for tag in sorted(ts):
            rec.ask("histograms", "histograms", "GET", p + "histograms/histograms", [("run", run), ("tag", tag)])
    tags = rec.ask("distributions", "tags", "GET", p + "distributions/tags")["body"]
    for run, ts in sorted(tags.items()):
        for tag in sorted(ts):
            rec.ask("distributions", "distributions", "GET", p + "distributions/distributions", [("run", run), ("tag", tag)])

    # Images and audio.
    for plugin, listing, single in [("images", "images", "individualImage"), ("audio", "audio", "individualAudio")]:
        tags = rec.ask(plugin, "tags", "GET", p + plugin + "/tags")["body"]
        for run, ts in sorted(tags.items()):
            for tag, info in sorted(ts.items()):
                for sample in range(max(info.get("samples", 1), 1)):
                    entries = rec.ask(plugin, listing, "GET", p + plugin + "/" + listing,
                                      [("run", run), ("tag", tag), ("sample", str(sample))])["body"]
                    for e in entries if isinstance(entries, list) else []:
                        rec.ask(plugin, single, "GET", p + plugin + "/" + single, query_of(e["query"]))

    # Text.
    tags = rec.ask("text", "tags", "GET", p + "text/tags")["body"]
    for run, ts in sorted(tags.items()):
        for tag in sorted(ts):
            rec.ask("text", "text", "GET", p + "text/text", [("run", run), ("tag", tag)])
            rec.ask("text", "text_plain", "GET", p + "text/text", [("run", run), ("tag", tag), ("markdown", "false")])

    # Graphs, with the attribute limit the frontend sends.
    info = rec.ask("graphs", "info", "GET", p + "graphs/info")["body"]
    limit = [("limit_attr_size", "1024"), ("large_attrs_key", "_too_large_attrs")]
    for run, ri in sorted(info.items()):
        if ri.get("run_graph"):
            rec.ask("graphs", "graph", "GET", p + "graphs/graph", [("run", run)] + limit)
        for tag, ti in sorted(ri.get("tags", {}).items()):
            if ti.get("conceptual_graph"):
                rec.ask("graphs", "graph_conceptual", "GET", p + "graphs/graph",
                        [("run", run), ("tag", tag), ("conceptual", "true")] + limit)
            if ti.get("op_graph"):
                rec.ask("graphs", "graph_tag", "GET", p + "graphs/graph", [("run", run), ("tag", tag)] + limit)
            if ti.get("profile"):
                rec.ask("graphs", "run_metadata", "GET", p + "graphs/run_metadata", [("run", run), ("tag", tag)])

    # PR curves.
    tags = rec.ask("pr_curves", "tags", "GET", p + "pr_curves/tags")["body"]
    runs_of = {}
    for run, ts in sorted(tags.items()):
        for tag in sorted(ts):
            runs_of.setdefault(tag, []).append(run)
    for tag, runs in sorted(runs_of.items()):
        rec.ask("pr_curves", "pr_curves", "GET", p + "pr_curves/pr_curves", [("run", r) for r in runs] + [("tag", tag)])
    rec.ask("errors", "pr_curves_unknown_tag", "GET", p + "pr_curves/pr_curves",
            [("run", "generated/pr_curves"), ("tag", "nope")])

    # Custom scalars: every chart's regexes, for every run.
    layout = rec.ask("custom_scalars", "layout", "GET", p + "custom_scalars/layout")["body"]
    regexes = set()
    for cat in layout.get("category", []):
        for chart in cat.get("chart", []):
            regexes.update(chart.get("multiline", {}).get("tag", []))
            ms = chart.get("margin", {}).get("series", [])
            for s in ms:
                regexes.update([s.get("value"), s.get("lower"), s.get("upper")])
    scalar_tags = rec.files["scalars"][0]["body"]
    for run in sorted(scalar_tags):
        for rx in sorted(r for r in regexes if r):
            rec.ask("custom_scalars", "scalars", "GET", p + "custom_scalars/scalars", [("run", run), ("tag", rx)])
    cs_runs = sorted(r for r in scalar_tags if r.startswith("generated/custom_scalars"))
    for run in cs_runs:
        for tag in sorted(scalar_tags[run]):
            for fmt in ["json", "csv"]:
                rec.ask("custom_scalars", "download_data", "GET", p + "custom_scalars/download_data",
                        [("run", run), ("tag", tag), ("format", fmt)])

    # Hparams, as the frontend posts them (JSON bodies).
    exp = rec.ask("hparams", "experiment", "POST", p + "hparams/experiment",
                  body_json={"experimentName": "", "hparamsLimit": 1000, "includeMetrics": False})["body"]
    rec.ask("hparams", "experiment_metrics", "POST", p + "hparams/experiment", body_json={"experimentName": ""})
    col = [{"hparam": h["name"], "includeInResult": True} for h in exp.get("hparamInfos", [])]
    statuses = ["STATUS_FAILURE", "STATUS_RUNNING", "STATUS_SUCCESS", "STATUS_UNKNOWN"]
    sg_req = {"experimentName": "", "allowedStatuses": statuses, "colParams": col,
              "startIndex": 0, "sliceSize": 1000000, "includeMetrics": False}
    rec.ask("hparams", "session_groups", "POST", p + "hparams/session_groups", body_json=sg_req)
    full = dict(sg_req, includeMetrics=True)
    full["colParams"] = col + [{"metric": m["name"], "includeInResult": True} for m in exp.get("metricInfos", [])]
    exp_m = rec.files["hparams"][1]["body"]
    full["colParams"] = col + [{"metric": m["name"], "includeInResult": True} for m in exp_m.get("metricInfos", [])]
    groups = rec.ask("hparams", "session_groups_metrics", "POST", p + "hparams/session_groups", body_json=full)["body"]
    if col:
        partial = dict(sg_req, colParams=[dict(col[0])] + [{"hparam": c["hparam"], "includeInResult": False} for c in col[1:]])
        rec.ask("hparams", "session_groups_partial", "POST", p + "hparams/session_groups", body_json=partial)
    # What scripts send beyond the frontend: sort, filters, paging, aggregation.
    metric0 = (exp_m.get("metricInfos") or [{}])[0].get("name")
    variants = {
        "sort_metric_desc": [{"metric": metric0, "order": "ORDER_DESC", "includeInResult": True}] if metric0 else [],
        "sort_hparam_asc_missing_first": [{"hparam": "learning_rate", "order": "ORDER_ASC", "missingValuesFirst": True}],
        "filter_interval": [{"hparam": "learning_rate", "filterInterval": {"minValue": 0.005, "maxValue": 1}}],
        "filter_regexp": [{"hparam": "optimizer", "filterRegexp": "^a"}],
        "filter_discrete_exclude_missing": [{"hparam": "use_bn", "filterDiscrete": [True], "excludeMissingValues": True}],
        "filter_metric_interval": [{"metric": metric0, "filterInterval": {"minValue": 0.9, "maxValue": 1}}] if metric0 else [],
    }
    for name, cols in sorted(variants.items()):
        rec.ask("hparams", "session_groups_" + name, "POST", p + "hparams/session_groups",
                body_json=dict(full, colParams=cols))
    rec.ask("hparams", "session_groups_paged", "POST", p + "hparams/session_groups",
            body_json=dict(full, startIndex=1, sliceSize=2))
    for agg in ["AGGREGATION_AVG", "AGGREGATION_MIN", "AGGREGATION_MAX", "AGGREGATION_MEDIAN"]:
        if metric0:
            rec.ask("hparams", "session_groups_" + agg.lower(), "POST", p + "hparams/session_groups",
                    body_json=dict(full, aggregationType=agg, aggregationMetric=metric0))
    rec.ask("hparams", "experiment_get", "GET", p + "hparams/experiment", [("request", json.dumps({"experimentName": ""}))])
    rec.ask("hparams", "experiment_limit", "POST", p + "hparams/experiment", body_json={"experimentName": "", "hparamsLimit": 2})
    for g in groups.get("sessionGroups", []):
        for s in g.get("sessions", []):
            for m in exp_m.get("metricInfos", []):
                rec.ask("hparams", "metric_evals", "POST", p + "hparams/metric_evals",
                        body_json={"experimentName": "", "sessionName": s["name"], "metricName": m["name"]})
    rec.ask("hparams", "metric_evals_missing", "POST", p + "hparams/metric_evals",
            body_json={"experimentName": "", "sessionName": "nope", "metricName": {"tag": "nope"}})
    n_cols = len(col) + len(exp_m.get("metricInfos", []))
    for fmt in ["csv", "json", "latex"]:
        rec.ask("hparams", "download_data", "GET", p + "hparams/download_data",
                [("format", fmt), ("columnsVisibility", json.dumps([True] * n_cols)), ("request", json.dumps(full))])

    # Mesh.
    tags = rec.ask("mesh", "tags", "GET", p + "mesh/tags")["body"]
    for run, ts in sorted(tags.items()):
        for tag in sorted(ts):
            metas = rec.ask("mesh", "meshes", "GET", p + "mesh/meshes", [("run", run), ("tag", tag)])["body"]
            # The frontend names the content type (MeshPluginData.ContentType)
            # that meshes gives as a number.
            names = {1: "VERTEX", 2: "FACE", 3: "COLOR"}
            for m in metas if isinstance(metas, list) else []:
                rec.ask("mesh", "data", "GET", p + "mesh/data",
                        [("run", run), ("tag", tag), ("content_type", names.get(m["content_type"], "UNDEFINED")),
                         ("sample", "0"), ("step", str(m["step"]))])

    # Time series (the metrics plugin), with both POST encodings.
    tags = rec.ask("timeseries", "tags", "GET", p + "timeseries/tags")["body"]
    reqs = []
    for tag in sorted(tags.get("scalars", {}).get("tagDescriptions", {}) or
                      {t for ts in tags.get("scalars", {}).get("runTagInfo", {}).values() for t in ts}):
        reqs.append({"plugin": "scalars", "tag": tag})
    for run, ts in sorted(tags.get("histograms", {}).get("runTagInfo", {}).items()):
        for tag in sorted(ts):
            reqs.append({"plugin": "histograms", "tag": tag, "run": run})
    for tag, runs in sorted(tags.get("images", {}).get("tagRunSampledInfo", {}).items()):
        for run, info in sorted(runs.items()):
            for sample in range(info.get("maxSamplesPerStep", 1)):
                reqs.append({"plugin": "images", "tag": tag, "run": run, "sample": sample})
    for i in range(0, len(reqs), 20):
        form = [("requests", json.dumps(reqs[i:i + 20]))]
        answer = rec.ask("timeseries", "timeSeries", "POST", p + "timeseries/timeSeries", form=form)["body"]
        for item in answer:
            if item.get("plugin") != "images":
                continue
            for run, series in sorted(item.get("runToSeries", {}).items()):
                for point in series:
                    rec.ask("timeseries", "imageData", "GET", p + "timeseries/imageData", [("imageId", point["imageId"])])

    # Errors: a garbage blob key, and series that do not exist.
    rec.ask("errors", "individualImage_garbage", "GET", p + "images/individualImage", [("blob_key", "garbage")])
    for route in ["scalars/scalars", "histograms/histograms", "distributions/distributions", "images/images",
                  "audio/audio", "text/text", "mesh/meshes"]:
        rec.ask("errors", route.replace("/", "_") + "_unknown_tag", "GET", p + route,
                [("run", "generated/scalars/train"), ("tag", "nope")])
    rec.ask("errors", "graph_unknown_run", "GET", p + "graphs/graph", [("run", "nope")])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tensorboard", required=True, help="a TensorBoard checkout (holds tensorboard/)")
    ap.add_argument("--logdir", default="../shared/corpus")
    ap.add_argument("--out", default="frontend-api/httpapi/testdata/tensorboard")
    args = ap.parse_args()
    tmp = load_tensorboard(os.path.abspath(args.tensorboard))
    try:
        import logging
        logging.disable(logging.WARNING)
        from tensorboard import default, program
        from tensorboard.backend import application
        from werkzeug.test import Client
        from tensorboard.backend.event_processing import io_wrapper

        # TensorBoard takes a directory whose name contains "tfevents"
        # (real/go_tensorboard/testdata/tfevents) for an event file and
        # fails every route with IsADirectoryError. The corpus semantics
        # (CONTRACT.md) skip it; so does the recorder.
        is_events = io_wrapper.IsTensorFlowEventsFile
        io_wrapper.IsTensorFlowEventsFile = lambda path: is_events(path) and not os.path.isdir(path)

        # tbhub's data model: of several points written at one step, the
        # last is the point. TensorBoard keeps them all (purging is off) and
        # resolves a blob key (run, tag, step, index) to the first event at
        # that step; the recorder has it look from the end instead, so a
        # graph or image written twice at a step is the last one written.
        from tensorboard.backend.event_processing import data_provider as mux_provider
        read_blob = mux_provider.MultiplexerDataProvider.read_blob

        def read_blob_last_written(self, ctx=None, *, blob_key):
            mux = self._multiplexer
            tensors = mux.Tensors
            mux.Tensors = lambda run, tag: list(reversed(tensors(run, tag)))
            try:
                return read_blob(self, ctx, blob_key=blob_key)
            finally:
                del mux.Tensors

        mux_provider.MultiplexerDataProvider.read_blob = read_blob_last_written

        tb = program.TensorBoard(default.get_plugins(), assets_zip_provider=empty_assets())
        tb.configure(argv=["tensorboard", "--logdir", os.path.abspath(args.logdir),
                           "--load_fast", "false", "--reload_interval", "0", "--reload_task", "blocking",
                           "--purge_orphaned_data", "false", "--samples_per_plugin", samples_flag()])
        provider, multiplexer = tb._make_data_provider()
        app = application.TensorBoardWSGIApp(tb.flags, tb.plugin_loaders, provider, tb.assets_zip_provider, multiplexer)
        rec = Recorder(Client(app))
        record(rec)
        rec.write(args.out)
        n = sum(len(v) for v in rec.files.values())
        print("recorded %d answers in %d files under %s" % (n, len(rec.files), args.out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
