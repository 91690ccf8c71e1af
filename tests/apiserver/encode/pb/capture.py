#!/usr/bin/env python3
"""Regenerate the fixtures of test_protobuf: <name>.bin is the request body
kubectl sends for a `kubectl create ...` command, <name>.json what the same
command prints with --dry-run=client -o json.

Usage: capture.py [KUBECTL]   (default: kubectl on PATH; run from anywhere)

A throwaway HTTP server on 127.0.0.1 answers GETs (discovery, /version) with
404 and every POST with a 500 Status after saving its body; kubectl's typed
clients need nothing more to send one request.
"""
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> kubectl arguments; the dry-run flags go before any "--".
COMMANDS = {
    "namespace": ["create", "namespace", "t1"],
    "configmap": ["create", "configmap", "c1", "--from-literal=a=b", "--from-literal=c=d"],
    "secret": ["create", "secret", "generic", "s1", "--from-literal=k=v"],
    "deployment": ["create", "deployment", "d1", "--image=nginx:1.25", "--replicas=2", "--port=80"],
    "job": ["create", "job", "j1", "--image=busybox", "--", "echo", "hi"],
    "serviceaccount": ["create", "serviceaccount", "sa1"],
    "service": ["create", "service", "clusterip", "svc1", "--tcp=80:8080"],
    "cronjob": ["create", "cronjob", "cj1", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
    "quota": ["create", "quota", "q1", "--hard=cpu=1,memory=1G,pods=2", "--scopes=BestEffort"],
    "service-nodeport": ["create", "service", "nodeport", "np1", "--tcp=80:http", "--node-port=30080"],
    "service-externalname": ["create", "service", "externalname", "en1", "--external-name=example.com"],
    "secret-docker": ["create", "secret", "docker-registry", "dr1", "--docker-username=u",
                      "--docker-password=p", "--docker-server=r.io"],
    "deployment-replicas0": ["create", "deployment", "d2", "--image=nginx", "--image=redis:7",
                             "--replicas=0"],
}

bodies = []


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        bodies.append((self.headers.get("Content-Type"), self.rfile.read(n)))
        out = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "message": "captured", "code": 500}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main():
    kubectl = sys.argv[1] if len(sys.argv) > 1 else "kubectl"
    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig", delete=False) as kc:
        kc.write("apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: 'http://127.0.0.1:%d'}\n"
                 "  name: c\ncontexts:\n- context: {cluster: c, user: u, namespace: default}\n"
                 "  name: c\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n" % srv.server_port)
    env = dict(os.environ, KUBECONFIG=kc.name)
    try:
        for name, args in COMMANDS.items():
            del bodies[:]
            subprocess.run([kubectl] + args, env=env, capture_output=True)
            if len(bodies) != 1 or "protobuf" not in (bodies[0][0] or ""):
                sys.exit("%s: expected one protobuf POST, got %r" % (name, [b[0] for b in bodies]))
            with open(os.path.join(HERE, name + ".bin"), "wb") as f:
                f.write(bodies[0][1])
            cut = args.index("--") if "--" in args else len(args)
            dry = args[:cut] + ["--dry-run=client", "-o", "json"] + args[cut:]
            out = subprocess.run([kubectl] + dry, env=env, capture_output=True, check=True).stdout
            with open(os.path.join(HERE, name + ".json"), "wb") as f:
                f.write(out)
            print(name, len(bodies[0][1]))
    finally:
        os.unlink(kc.name)
        srv.shutdown()


if __name__ == "__main__":
    main()
