#!/usr/bin/env python3
"""revision_match.py DS.json REVISION.json -- exit 0 when the revision's data
bytes are what Kubernetes' getPatch (pkg/controller/daemon/update.go) makes of
the DaemonSet, as the conformance suite's daemon.Match compares them
(bytes.Equal): Go's encoding of the typed template (metadata.creationTimestamp
null, containers' resources {}), decoded into a map and encoded again: keys
sorted, compact. Prints both on a mismatch."""
import json
import sys

ds = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
start = text.index('"data":') + len('"data":')
_, end = json.JSONDecoder().raw_decode(text, start)
got = text[start:end]
tmpl = ds["spec"]["template"]
tmpl.setdefault("metadata", {}).setdefault("creationTimestamp", None)
for which in ("initContainers", "containers"):
    for c in tmpl.get("spec", {}).get(which, []):
        c.setdefault("resources", {})
tmpl["$patch"] = "replace"
want = json.dumps({"spec": {"template": tmpl}}, sort_keys=True, separators=(",", ":"),
                  ensure_ascii=False)
if got != want:
    print("got:  " + got + "\nwant: " + want)
    sys.exit(1)
