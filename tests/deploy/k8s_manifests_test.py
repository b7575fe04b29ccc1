"""Checks deploy/k8s: every manifest against the Kubernetes API schemas (kubernetes-validate,
which bundles them: no network), strictly (an unknown field is an error), for the oldest and the
newest Kubernetes it knows; then that the manifests agree with each other and with hetps: the
job file in the ConfigMap passes `hetps-scheduler --check` and its servers and trainers match the
StatefulSets' replicas, ports and Prometheus annotations agree, GPU trainers request
nvidia.com/gpu, every container runs a binary the Dockerfile installs with flags that binary
has, and the Dockerfile's runtime stage has the Debian packages of every shared library the
built binaries load.

usage: /usr/bin/python3 k8s_manifests_test.py REPO BUILD_DIR
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import kubernetes_validate
import yaml

VERSIONS = ("1.25.0", "1.37.0")
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)
    return condition


def load_manifests(k8s_dir):
    docs = []
    for path in sorted(glob.glob(os.path.join(k8s_dir, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((os.path.basename(path), doc))
    return docs


def validate_all(docs):
    for name, doc in docs:
        for version in VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                failures.append(f"{name}: {doc['kind']} {doc['metadata']['name']} (Kubernetes {version}): {e.message}")
    # The validator must refuse what the API server would: a misspelt field and a wrong type.
    _, deployment = next((n, d) for n, d in docs if d["kind"] == "Deployment")
    for broken, what in ((dict(deployment, spec=dict(deployment["spec"], replica=1)), "a misspelt field"),
                         (dict(deployment, spec=dict(deployment["spec"], replicas="one")), "a string for replicas")):
        try:
            kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)
            failures.append(f"the validator accepted {what}")
        except kubernetes_validate.ValidationError:
            pass


def containers(doc):
    return doc["spec"]["template"]["spec"]["containers"]


def flag_value(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def check_consistency(docs, build_dir, dockerfile):
    by_kind = {}
    for _, doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    namespaces = {d["metadata"]["name"] for d in by_kind.get("Namespace", [])}
    for _, doc in docs:
        if doc["kind"] != "Namespace":
            expect(doc["metadata"].get("namespace") in namespaces,
                   f"{doc['kind']} {doc['metadata']['name']} is not in the namespace the manifests create")

    # The job file: valid for hetps-scheduler, and the StatefulSets run as many members as it waits for.
    configmap = by_kind["ConfigMap"][0]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as job_file:
        job_file.write(configmap["data"]["job.yaml"])
        job_file.flush()
        checked = subprocess.run([os.path.join(build_dir, "bin", "hetps-scheduler"), "--config", job_file.name,
                                  "--check"], capture_output=True, text=True)
    if not expect(checked.returncode == 0, f"the ConfigMap's job.yaml fails --check: {checked.stderr.strip()}"):
        return
    job = yaml.safe_load(checked.stdout)
    sets = by_kind["StatefulSet"]
    servers = [s for s in sets if containers(s)[0]["command"] == ["hetps-server"]]
    trainers = [s for s in sets if containers(s)[0]["command"] == ["hetps-trainer"]]
    expect(sum(s["spec"]["replicas"] for s in servers) == job["servers"],
           f"server replicas {[s['spec']['replicas'] for s in servers]} against servers: {job['servers']}")
    expect(sum(s["spec"]["replicas"] for s in trainers) == job["trainers"],
           f"trainer replicas {[s['spec']['replicas'] for s in trainers]} against trainers: {job['trainers']}")

    # The scheduler: its Service, container ports, --listen, --http and the scrape annotations agree.
    deployment = by_kind["Deployment"][0]
    scheduler = containers(deployment)[0]
    ports = {p["name"]: p["containerPort"] for p in scheduler["ports"]}
    listen = flag_value(scheduler["args"], "--listen")
    expect(listen == f"tcp://0.0.0.0:{ports['control']}", f"--listen {listen} against the control port {ports['control']}")
    http = flag_value(scheduler["args"], "--http")
    expect(http == f"0.0.0.0:{ports['metrics']}", f"--http {http} against the metrics port {ports['metrics']}")
    expect(ports["metrics"] == 7480, "the metrics port is not 7480")
    service = next(s for s in by_kind["Service"] if s["metadata"]["name"] == "hetps-scheduler")
    expect(service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items(),
           "the scheduler's Service selects no scheduler pod")
    expect({p["targetPort"] for p in service["spec"]["ports"]} == set(ports), "the Service's target ports")
    for what, annotations in (("pod", deployment["spec"]["template"]["metadata"].get("annotations", {})),
                              ("service", service["metadata"].get("annotations", {}))):
        expect(annotations.get("prometheus.io/scrape") == "true", f"the scheduler {what} is not annotated for scraping")
        expect(annotations.get("prometheus.io/port") == str(ports["metrics"]), f"the scheduler {what}'s scrape port")
        expect(annotations.get("prometheus.io/path") == "/metrics", f"the scheduler {what}'s scrape path")
    address = f"tcp://{service['metadata']['name']}.{service['metadata']['namespace']}.svc:{ports['control']}"
    for s in servers + trainers:
        c = containers(s)[0]
        expect(flag_value(c["args"], "--scheduler") == address,
               f"{s['metadata']['name']} dials {flag_value(c['args'], '--scheduler')}, not {address}")

    # GPU trainers ask for a GPU and use it; CPU trainers do not.
    for s in trainers:
        c = containers(s)[0]
        device = flag_value(c["args"], "--device")
        gpus = c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
        if device.startswith("cuda"):
            expect(gpus == 1 and c["resources"]["requests"].get("nvidia.com/gpu") == 1,
                   f"{s['metadata']['name']} runs on {device} without requesting nvidia.com/gpu: 1")
        else:
            expect(gpus is None, f"{s['metadata']['name']} runs on {device} but requests a GPU")
    expect(any(flag_value(containers(s)[0]["args"], "--device").startswith("cuda") for s in trainers),
           "no GPU trainers")

    # Every container runs a binary the image installs, with flags that binary knows.
    with open(dockerfile) as f:
        text = f.read()
    installed = set(re.findall(r"/build/bin/(hetps-[a-z]+)", text))
    for s in [deployment] + servers + trainers:
        c = containers(s)[0]
        program = c["command"][0]
        if not expect(program in installed, f"{s['metadata']['name']} runs {program}, which the Dockerfile does not install"):
            continue
        usage = subprocess.run([os.path.join(build_dir, "bin", program), "--help"], capture_output=True, text=True).stdout
        for flag in (a for a in c["args"] if a.startswith("--")):
            if flag == "--http" and "--http" not in usage:
                print(f"note: this build's {program} has no --http yet; not checked")
                continue
            expect(re.search(rf"(^|\s|,){re.escape(flag)}\b", usage) is not None, f"{program} has no {flag} flag")
    froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
    expect(froms and all(re.match(r"debian:(12|bookworm)\b", f) for f in froms), f"the Dockerfile's bases are {froms}")
    check_runtime_libraries(build_dir, text)


def dpkg_depends(package):
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}", package],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return []
    names = []
    for group in out.stdout.split(","):
        for alternative in group.split("|"):
            name = alternative.strip().split(" ")[0].split(":")[0]
            if name:
                names.append(name)
    return names


def check_runtime_libraries(build_dir, dockerfile_text):
    """Every shared library a binary loads here comes from a package the runtime stage installs,
    or one of their dependencies."""
    runtime = dockerfile_text.split("FROM debian:12-slim", 1)[-1]
    install = re.search(r"apt-get install[^\n]*((?:\n[^\n]*\\)*\n[^\n]*)", runtime)
    listed = set(re.findall(r"\b([a-z0-9][a-z0-9.+-]+[0-9a-z])\b", install.group(1))) - {"rm", "update-alternatives"}
    closure, todo = set(), list(listed)
    while todo:
        package = todo.pop()
        if package not in closure:
            closure.add(package)
            todo.extend(dpkg_depends(package))
    libraries = {}  # (path as loaded, its real path) -> the programs that load it
    for program in ("hetps-scheduler", "hetps-server", "hetps-trainer"):
        ldd = subprocess.run(["ldd", os.path.join(build_dir, "bin", program)], capture_output=True, text=True).stdout
        for path in re.findall(r"=> (/\S+)", ldd):
            libraries.setdefault((path, os.path.realpath(path)), []).append(program)

    def names(path):  # dpkg may list a file under /lib or /usr/lib (Debian's merged /usr)
        return {path, re.sub(r"^/usr/lib/", "/lib/", path), re.sub(r"^/lib/", "/usr/lib/", path)}

    candidates = sorted(set().union(*(names(p) | names(r) for p, r in libraries)))
    # One dpkg -S for all: a call each takes minutes for LibTorch's couple of hundred libraries.
    listing = subprocess.run(["dpkg", "-S", *candidates], capture_output=True, text=True).stdout
    owners = {}
    for line in listing.splitlines():
        package, _, path = line.partition(": ")
        owners[path] = package.split(":")[0].split(",")[0]
    missing = {}
    for (path, real), programs in libraries.items():
        package = next((owners[n] for n in sorted(names(path) | names(real)) if n in owners), None)
        if not expect(package is not None, f"{', '.join(programs)} load {path}, which no Debian package owns"):
            continue
        if package not in closure:
            for program in programs:
                missing.setdefault(program, []).append(f"{os.path.basename(path)} ({package})")
    for program, lacking in sorted(missing.items()):
        expect(False, f"{program} loads {len(lacking)} libraries from packages the runtime stage lacks: "
                      f"{', '.join(lacking[:8])}{' ...' if len(lacking) > 8 else ''}")


def main():
    repo, build_dir = sys.argv[1], sys.argv[2]
    docs = load_manifests(os.path.join(repo, "deploy", "k8s"))
    kinds = sorted({d["kind"] for _, d in docs})
    expect(kinds == ["ConfigMap", "Deployment", "Namespace", "Service", "StatefulSet"], f"the kinds are {kinds}")
    validate_all(docs)
    check_consistency(docs, build_dir, os.path.join(repo, "deploy", "k8s", "Dockerfile"))
    if failures:
        for failure in failures:
            print(f"FAILED: {failure}")
        sys.exit(1)
    print(f"ok: {len(docs)} manifests valid for Kubernetes {' and '.join(VERSIONS)} and consistent with hetps")


if __name__ == "__main__":
    main()
