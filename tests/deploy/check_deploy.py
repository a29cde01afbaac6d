#!/usr/bin/env python3
"""Offline checks of the deployment files (deploy/, .dockerignore).

    /usr/bin/python3 tests/deploy/check_deploy.py [PATH/TO/xonnx]

Needs Python 3 and PyYAML; no cluster, no Docker daemon, no network.

- every YAML document parses and has apiVersion, kind and metadata.name;
  the fields of the Kubernetes and KServe objects used are known ones
  (a small built-in list, since no schema is available offline), and
  label, annotation and env values are strings;
- the Deployment: its probes ask /v2/health/ready and /v2/health/live on
  the HTTP port, its container ports are those its args give the server,
  the model repository is the PVC xonnx-models, the compile cache is on a
  volume, the grace period outlasts preStop plus --exit-timeout-secs, it
  runs as non-root, the Prometheus annotations name the metrics port;
- the Services' ports reach the Deployment's container ports; the HPA and
  the PodDisruptionBudget target the Deployment;
- the KServe ServingRuntime and InferenceService agree with each other and
  with KServe's conventions;
- with the xonnx binary given: the Deployment's and the runtime's args are
  flags `xonnx serve --help` lists, and (on Debian, with dpkg and apt-cache)
  every shared library the program and its CPU plugin load comes from a
  package the Dockerfile's runtime stage installs or pulls in; without it
  these checks are skipped, and the output says so;
- deploy/Dockerfile: a multi-stage build on Debian 12 whose build stage
  uses scripts/install_deps.sh and whose runtime stage installs Debian
  packages (all known to apt-cache when it is present), copies the install
  from the build stage, runs as a non-root user, exposes 8000/8001/8002, has
  a HEALTHCHECK on /v2/health/ready, and downloads nothing but apt packages;
- with kubectl on PATH: `kubectl label --local --dry-run=client` decodes
  every document as a Kubernetes object (works without a cluster, checks no
  schema); `kubectl apply --dry-run=client --validate=false` runs only when
  an API server answers (it needs one for discovery), else it is skipped.

Prints one line per check and ends with "N passed, M failed"; exits 1 when
a check failed.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S_FILE = os.path.join(ROOT, "deploy", "kubernetes", "xonnx-serve.yaml")
RUNTIME_FILE = os.path.join(ROOT, "deploy", "kserve", "serving-runtime.yaml")
ISVC_FILE = os.path.join(ROOT, "deploy", "kserve", "inference-service.yaml")
DOCKERFILE = os.path.join(ROOT, "deploy", "Dockerfile")
DOCKERIGNORE = os.path.join(ROOT, ".dockerignore")

# The server's facts (src/cli/serve_command.cc, docs/deploy.md).
HTTP_PORT, GRPC_PORT, METRICS_PORT = 8000, 8001, 8002
READY_PATH, LIVE_PATH = "/v2/health/ready", "/v2/health/live"
MODELS_CLAIM = "xonnx-models"
DEFAULT_EXIT_TIMEOUT = 30


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}" + (f": {detail}" if detail else ""))
        return ok

    def skip(self, name, why):
        self.skipped += 1
        print(f"SKIP {name}: {why}")


R = Results()


def rel(path):
    return os.path.relpath(path, ROOT)


# ------------------------------------------------------------ field lists --
# The fields of the API types these files use (Kubernetes 1.32, KServe
# 0.14+). A key outside its type's list is a typo or a field of another
# type. Values: None (not descended into), "Type", or ["Type"] (a list).
OBJECT_META = {k: None for k in ("name", "generateName", "namespace", "labels", "annotations",
                                 "ownerReferences", "finalizers")}
CONTAINER = {
    "args": None, "command": None, "env": ["EnvVar"], "envFrom": None, "image": None,
    "imagePullPolicy": None, "lifecycle": "Lifecycle", "livenessProbe": "Probe", "name": None,
    "ports": ["ContainerPort"], "readinessProbe": "Probe", "resizePolicy": None,
    "resources": "ResourceRequirements", "restartPolicy": None, "securityContext": "SecurityContext",
    "startupProbe": "Probe", "stdin": None, "stdinOnce": None, "terminationMessagePath": None,
    "terminationMessagePolicy": None, "tty": None, "volumeDevices": None,
    "volumeMounts": ["VolumeMount"], "workingDir": None,
}
POD_SPEC = {k: None for k in (
    "activeDeadlineSeconds", "automountServiceAccountToken", "dnsConfig", "dnsPolicy",
    "enableServiceLinks", "ephemeralContainers", "hostAliases", "hostIPC", "hostNetwork", "hostPID",
    "hostUsers", "hostname", "imagePullSecrets", "nodeName", "nodeSelector", "os", "overhead",
    "preemptionPolicy", "priority", "priorityClassName", "readinessGates", "resourceClaims", "resources",
    "restartPolicy", "runtimeClassName", "schedulerName", "schedulingGates", "serviceAccount",
    "serviceAccountName", "setHostnameAsFQDN", "shareProcessNamespace", "subdomain",
    "terminationGracePeriodSeconds", "tolerations", "topologySpreadConstraints")}
POD_SPEC.update({"affinity": "Affinity", "containers": ["Container"], "initContainers": ["Container"],
                 "securityContext": "PodSecurityContext", "volumes": ["Volume"]})
VOLUME_SOURCES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "configMap", "csi",
    "downwardAPI", "ephemeral", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo",
    "glusterfs", "hostPath", "image", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume",
    "projected", "quobyte", "rbd", "scaleIO", "secret", "storageos", "vsphereVolume")
TYPES = {
    "ObjectMeta": OBJECT_META,
    "LabelSelector": {"matchLabels": None, "matchExpressions": None},
    "Deployment": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "spec": "DeploymentSpec"},
    "DeploymentSpec": {"replicas": None, "selector": "LabelSelector", "template": "PodTemplateSpec",
                       "strategy": "DeploymentStrategy", "minReadySeconds": None,
                       "revisionHistoryLimit": None, "paused": None, "progressDeadlineSeconds": None},
    "DeploymentStrategy": {"type": None, "rollingUpdate": {"maxUnavailable": None, "maxSurge": None}},
    "PodTemplateSpec": {"metadata": "ObjectMeta", "spec": "PodSpec"},
    "PodSpec": POD_SPEC,
    "PodSecurityContext": {k: None for k in (
        "appArmorProfile", "fsGroup", "fsGroupChangePolicy", "runAsGroup", "runAsNonRoot", "runAsUser",
        "seLinuxChangePolicy", "seLinuxOptions", "seccompProfile", "supplementalGroups",
        "supplementalGroupsPolicy", "sysctls", "windowsOptions")},
    "Affinity": {"nodeAffinity": None, "podAffinity": "PodAffinity", "podAntiAffinity": "PodAffinity"},
    "PodAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["PodAffinityTerm"],
                    "preferredDuringSchedulingIgnoredDuringExecution": ["WeightedPodAffinityTerm"]},
    "WeightedPodAffinityTerm": {"weight": None, "podAffinityTerm": "PodAffinityTerm"},
    "PodAffinityTerm": {"labelSelector": "LabelSelector", "namespaceSelector": "LabelSelector",
                        "namespaces": None, "topologyKey": None, "matchLabelKeys": None,
                        "mismatchLabelKeys": None},
    "Container": CONTAINER,
    "EnvVar": {"name": None, "value": None, "valueFrom": "EnvVarSource"},
    "EnvVarSource": {"configMapKeyRef": None, "fieldRef": None, "secretKeyRef": None,
                     "resourceFieldRef": {"containerName": None, "divisor": None, "resource": None}},
    "ContainerPort": {"containerPort": None, "hostIP": None, "hostPort": None, "name": None, "protocol": None},
    "Probe": {"exec": "ExecAction", "failureThreshold": None, "grpc": None, "httpGet": "HTTPGetAction",
              "initialDelaySeconds": None, "periodSeconds": None, "successThreshold": None,
              "tcpSocket": None, "terminationGracePeriodSeconds": None, "timeoutSeconds": None},
    "HTTPGetAction": {"host": None, "httpHeaders": None, "path": None, "port": None, "scheme": None},
    "ExecAction": {"command": None},
    "Lifecycle": {"postStart": "LifecycleHandler", "preStop": "LifecycleHandler", "stopSignal": None},
    "LifecycleHandler": {"exec": "ExecAction", "httpGet": "HTTPGetAction", "sleep": {"seconds": None},
                         "tcpSocket": None},
    "ResourceRequirements": {"claims": None, "limits": None, "requests": None},
    "SecurityContext": {"allowPrivilegeEscalation": None, "appArmorProfile": None,
                        "capabilities": {"add": None, "drop": None}, "privileged": None, "procMount": None,
                        "readOnlyRootFilesystem": None, "runAsGroup": None, "runAsNonRoot": None,
                        "runAsUser": None, "seLinuxOptions": None, "seccompProfile": None,
                        "windowsOptions": None},
    "VolumeMount": {"mountPath": None, "mountPropagation": None, "name": None, "readOnly": None,
                    "recursiveReadOnly": None, "subPath": None, "subPathExpr": None},
    "Volume": dict({k: None for k in VOLUME_SOURCES}, name=None,
                   persistentVolumeClaim={"claimName": None, "readOnly": None},
                   emptyDir={"medium": None, "sizeLimit": None}),
    "Service": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "spec": "ServiceSpec"},
    "ServiceSpec": dict({k: None for k in (
        "allocateLoadBalancerNodePorts", "clusterIP", "clusterIPs", "externalIPs", "externalName",
        "externalTrafficPolicy", "healthCheckNodePort", "internalTrafficPolicy", "ipFamilies",
        "ipFamilyPolicy", "loadBalancerClass", "loadBalancerIP", "loadBalancerSourceRanges",
        "publishNotReadyAddresses", "selector", "sessionAffinity", "sessionAffinityConfig",
        "trafficDistribution", "type")}, ports=["ServicePort"]),
    "ServicePort": {"appProtocol": None, "name": None, "nodePort": None, "port": None, "protocol": None,
                    "targetPort": None},
    "PersistentVolumeClaim": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                              "spec": {k: None for k in (
                                  "accessModes", "dataSource", "dataSourceRef", "selector",
                                  "storageClassName", "volumeAttributesClassName", "volumeMode",
                                  "volumeName")} | {"resources": {"limits": None, "requests": None}}},
    "PodDisruptionBudget": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                            "spec": {"maxUnavailable": None, "minAvailable": None,
                                     "selector": "LabelSelector", "unhealthyPodEvictionPolicy": None}},
    "HorizontalPodAutoscaler": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                                "spec": "HPASpec"},
    "HPASpec": {"behavior": {"scaleUp": "HPAScalingRules", "scaleDown": "HPAScalingRules"},
                "maxReplicas": None, "minReplicas": None, "metrics": ["MetricSpec"],
                "scaleTargetRef": {"apiVersion": None, "kind": None, "name": None}},
    "HPAScalingRules": {"policies": [{"type": None, "value": None, "periodSeconds": None}],
                        "selectPolicy": None, "stabilizationWindowSeconds": None, "tolerance": None},
    "MetricSpec": {"type": None, "containerResource": None, "external": None, "object": None,
                   "pods": None, "resource": {"name": None, "target": "MetricTarget"}},
    "MetricTarget": {"type": None, "averageUtilization": None, "averageValue": None, "value": None},
    # KServe (serving.kserve.io): ServingRuntimeSpec embeds ServingRuntimePodSpec.
    "ServingRuntime": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta", "spec": "ServingRuntimeSpec"},
    "ServingRuntimeSpec": {k: None for k in (
        "multiModel", "disabled", "protocolVersions", "grpcEndpoint", "grpcDataEndpoint",
        "httpDataEndpoint", "replicas", "storageHelper", "builtInAdapter", "workerSpec", "nodeSelector",
        "affinity", "tolerations", "labels", "annotations", "imagePullSecrets", "hostIPC", "hostNetwork",
        "dnsPolicy", "schedulerName")} | {
        "supportedModelFormats": [{"name": None, "version": None, "autoSelect": None, "priority": None,
                                   "operator": None}],
        "containers": ["Container"], "volumes": ["Volume"]},
    "InferenceService": {"apiVersion": None, "kind": None, "metadata": "ObjectMeta",
                         "spec": {"predictor": "PredictorSpec", "transformer": None, "explainer": None}},
    # PredictorSpec: a PodSpec, KServe's ComponentExtensionSpec and the
    # predictor kinds.
    "PredictorSpec": dict(POD_SPEC, **{k: None for k in (
        "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType", "autoScaling",
        "containerConcurrency", "timeout", "canaryTrafficPercent", "logger", "batcher", "labels",
        "annotations", "deploymentStrategy", "workerSpec", "sklearn", "xgboost", "tensorflow", "pytorch",
        "triton", "onnx", "pmml", "lightgbm", "paddle", "huggingface")}, model="ModelSpec"),
    # ModelSpec: a Container plus the model's fields.
    "ModelSpec": dict(CONTAINER, modelFormat={"name": None, "version": None}, runtime=None,
                      protocolVersion=None, storageUri=None, storage=None, runtimeVersion=None),
}


def unknown_fields(value, typ, path):
    """Paths of keys that `typ` does not have, descending into known types."""
    spec = TYPES[typ] if isinstance(typ, str) else typ
    if isinstance(spec, list):
        if not isinstance(value, list):
            return [f"{path}: a list expected"]
        return [p for i, v in enumerate(value) for p in unknown_fields(v, spec[0], f"{path}[{i}]")]
    if not isinstance(value, dict):
        return [f"{path}: a mapping expected"]
    out = []
    for k, v in value.items():
        if k not in spec:
            out.append(f"{path}.{k}")
        elif spec[k] is not None:
            out.extend(unknown_fields(v, spec[k], f"{path}.{k}"))
    return out


def string_values(doc, path="", out=None):
    """Paths of labels, annotations and env values that YAML did not read as
    strings (8002 or true without quotes: Kubernetes rejects them)."""
    out = [] if out is None else out
    if isinstance(doc, dict):
        for k, v in doc.items():
            p = f"{path}.{k}" if path else str(k)
            if k in ("labels", "annotations", "matchLabels", "nodeSelector") and isinstance(v, dict):
                out.extend(f"{p}.{lk}" for lk, lv in v.items() if not isinstance(lv, str))
            if k == "selector" and isinstance(v, dict):  # a Service's: name -> value
                out.extend(f"{p}.{lk}" for lk, lv in v.items() if not isinstance(lv, (str, dict, list)))
            if k == "env" and isinstance(v, list):
                out.extend(f"{p}.{e.get('name')}" for e in v
                           if isinstance(e, dict) and "value" in e and not isinstance(e["value"], str))
            string_values(v, p, out)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            string_values(v, f"{path}[{i}]", out)
    return out


# ------------------------------------------------------------------ YAML --
def load_all():
    files = sorted(glob.glob(os.path.join(ROOT, "deploy", "kubernetes", "*.yaml")) +
                   glob.glob(os.path.join(ROOT, "deploy", "kserve", "*.yaml")))
    docs = []  # (file, index, doc)
    for f in files:
        try:
            with open(f) as fh:
                parsed = [d for d in yaml.safe_load_all(fh) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            R.check(f"{rel(f)} parses as YAML", False, str(e).replace("\n", " "))
            continue
        R.check(f"{rel(f)} parses as YAML ({len(parsed)} documents)", len(parsed) > 0, "no documents")
        for i, d in enumerate(parsed):
            label = f"{rel(f)} document {i + 1}"
            if not isinstance(d, dict):
                R.check(f"{label} is a mapping", False)
                continue
            meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
            name = meta.get("name")
            ok = (isinstance(d.get("apiVersion"), str) and isinstance(d.get("kind"), str)
                  and isinstance(name, str) and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name or "") is not None)
            R.check(f"{label} has apiVersion, kind and metadata.name ({d.get('kind')}/{name})", ok,
                    f"apiVersion={d.get('apiVersion')!r} kind={d.get('kind')!r} name={name!r}")
            docs.append((f, i, d))
    for f in (K8S_FILE, RUNTIME_FILE, ISVC_FILE):
        R.check(f"{rel(f)} exists", os.path.exists(f))
    return docs


def check_fields(docs):
    for f, i, d in docs:
        kind = d.get("kind")
        label = f"{rel(f)} {kind}/{d.get('metadata', {}).get('name')}"
        if kind in TYPES:
            bad = unknown_fields(d, kind, kind)
            R.check(f"{label}: every field is one the API knows", not bad, "unknown: " + ", ".join(bad))
        else:
            R.check(f"{label}: a kind these checks know", False, f"no field list for {kind}")
        bad = string_values(d)
        R.check(f"{label}: label, annotation and env values are strings", not bad, ", ".join(bad))


# ----------------------------------------------------------- server args --
def parse_args(args):
    """`serve --a=1 --b 2 --flag` -> {"--a": "1", "--b": "2", "--flag": None}."""
    out, i = {}, 0
    args = [str(a) for a in args]
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a.split("=", 1)
                out[k] = v
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                out[a] = args[i + 1]
                i += 1
            else:
                out[a] = None
        i += 1
    return out


def flag_int(flags, name, default):
    try:
        return int(flags.get(name, default))
    except (TypeError, ValueError):
        return None


def one(docs, kind, path=None):
    found = [d for f, i, d in docs if d.get("kind") == kind and (path is None or f == path)]
    return found[0] if len(found) == 1 else None


def resolve_port(port, container):
    by_name = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    return by_name.get(port) if isinstance(port, str) else port


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_deployment(docs):
    dep = one(docs, "Deployment", K8S_FILE)
    if not R.check(f"{rel(K8S_FILE)} holds one Deployment", dep is not None):
        return None, None
    pod = dep["spec"]["template"]
    spec = pod.get("spec", {})
    containers = spec.get("containers", [])
    c = next((x for x in containers if x.get("name") == "xonnx-serve"), containers[0] if containers else {})
    args = c.get("args", [])
    flags = parse_args(args)
    http = flag_int(flags, "--http-port", HTTP_PORT)
    grpc = flag_int(flags, "--grpc-port", GRPC_PORT)
    metrics = flag_int(flags, "--metrics-port", METRICS_PORT)
    d = "Deployment"
    R.check(f"{d}: the container runs `xonnx serve` (args start with serve)", args[:1] == ["serve"], f"args={args}")
    R.check(f"{d}: server ports are {HTTP_PORT}/{GRPC_PORT}/{METRICS_PORT} (http/grpc/metrics)",
            (http, grpc, metrics) == (HTTP_PORT, GRPC_PORT, METRICS_PORT), f"{(http, grpc, metrics)}")
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    R.check(f"{d}: container ports http/grpc/metrics match the server's args", ports.get("http") == http
            and ports.get("grpc") == grpc and ports.get("metrics") == metrics, f"ports={ports}")
    R.check(f"{d}: selector matches the pod template's labels",
            selects(dep["spec"].get("selector", {}).get("matchLabels"), pod.get("metadata", {}).get("labels", {})))

    for probe, paths in (("readinessProbe", [READY_PATH]), ("livenessProbe", [LIVE_PATH]),
                         ("startupProbe", [LIVE_PATH, READY_PATH])):
        get = (c.get(probe) or {}).get("httpGet") or {}
        port = resolve_port(get.get("port"), c)
        R.check(f"{d}: {probe} GETs {' or '.join(paths)} on the HTTP port {http}",
                get.get("path") in paths and port == http, f"path={get.get('path')} port={get.get('port')}->{port}")
    sp = c.get("startupProbe") or {}
    budget = sp.get("periodSeconds", 10) * sp.get("failureThreshold", 3)
    R.check(f"{d}: startupProbe allows at least 2 minutes for loading and compiling ({budget} s)", budget >= 120)

    volumes = {v.get("name"): v for v in spec.get("volumes", [])}
    mounts = {m.get("mountPath"): m.get("name") for m in c.get("volumeMounts", [])}
    repo = flags.get("--model-repository") or flags.get("--model-store")
    repo_vol = volumes.get(mounts.get(repo), {})
    R.check(f"{d}: --model-repository {repo} is the PVC {MODELS_CLAIM}",
            repo_vol.get("persistentVolumeClaim", {}).get("claimName") == MODELS_CLAIM, f"volume={repo_vol}")
    env = {e.get("name"): e for e in c.get("env", [])}
    cache = flags.get("--cache-dir") or (env.get("XONNX_CACHE_DIR") or {}).get("value") or "/var/cache/xonnx"
    cache_vol = volumes.get(mounts.get(cache), {})
    R.check(f"{d}: the compile cache {cache} is on a PVC or emptyDir volume",
            "persistentVolumeClaim" in cache_vol or "emptyDir" in cache_vol, f"volume={cache_vol}")
    claims = {v["persistentVolumeClaim"]["claimName"] for v in volumes.values() if "persistentVolumeClaim" in v}
    defined = {dd["metadata"]["name"] for f, i, dd in docs if dd.get("kind") == "PersistentVolumeClaim"}
    R.check(f"{d}: every claim it mounts is defined beside it ({', '.join(sorted(claims))})",
            claims <= defined, f"missing {claims - defined}")

    res = c.get("resources", {})
    R.check(f"{d}: resources set requests and limits for cpu and memory",
            all(k in res.get(w, {}) for w in ("requests", "limits") for k in ("cpu", "memory")), f"{res}")
    omp = ((env.get("OMP_NUM_THREADS") or {}).get("valueFrom") or {}).get("resourceFieldRef", {})
    R.check(f"{d}: OMP_NUM_THREADS follows limits.cpu", omp.get("resource") == "limits.cpu", f"{omp}")

    pre = (c.get("lifecycle") or {}).get("preStop") or {}
    cmd = (pre.get("exec") or {}).get("command") or []
    sleep = pre.get("sleep", {}).get("seconds") if "sleep" in pre else (
        int(cmd[-1]) if len(cmd) >= 2 and cmd[-2].endswith("sleep") and str(cmd[-1]).isdigit() else None)
    R.check(f"{d}: preStop sleeps a few seconds ({sleep})", sleep is not None and 1 <= sleep <= 30, f"preStop={pre}")
    exit_timeout = flag_int(flags, "--exit-timeout-secs", DEFAULT_EXIT_TIMEOUT)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    R.check(f"{d}: terminationGracePeriodSeconds {grace} > preStop {sleep} + --exit-timeout-secs {exit_timeout}",
            exit_timeout is not None and grace > (sleep or 0) + exit_timeout)

    psc, csc = spec.get("securityContext", {}), c.get("securityContext", {})
    non_root = csc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    R.check(f"{d}: runs as non-root (runAsNonRoot, runAsUser {uid})", non_root and uid not in (0, None))
    R.check(f"{d}: no privilege escalation, all capabilities dropped",
            csc.get("allowPrivilegeEscalation") is False and "ALL" in (csc.get("capabilities") or {}).get("drop", []))

    ann = pod.get("metadata", {}).get("annotations", {})
    R.check(f"{d}: Prometheus annotations scrape /metrics on the metrics port {metrics}",
            ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == str(metrics)
            and ann.get("prometheus.io/path") == "/metrics", f"{ann}")
    return dep, c


def check_services(docs, dep, c):
    labels = dep["spec"]["template"]["metadata"]["labels"]
    services = [d for f, i, d in docs if d.get("kind") == "Service" and f == K8S_FILE]
    R.check("Service: at least one selects the Deployment's pods",
            any(selects(s["spec"].get("selector"), labels) for s in services))
    cports = {p.get("containerPort") for p in c.get("ports", [])}
    for s in services:
        name = s["metadata"]["name"]
        if not selects(s["spec"].get("selector"), labels):
            R.check(f"Service {name}: selects the Deployment's pods", False, f"selector={s['spec'].get('selector')}")
            continue
        for p in s["spec"].get("ports", []):
            target = resolve_port(p.get("targetPort", p.get("port")), c)
            R.check(f"Service {name}: port {p.get('name')} {p.get('port')} -> container port {target}",
                    target in cports and target == p.get("port") and p.get("name") is not None and
                    bool(p.get("appProtocol")), f"targetPort={p.get('targetPort')} appProtocol={p.get('appProtocol')}")
    main = next((s for s in services if s["metadata"]["name"] == dep["metadata"]["name"]), None)
    want = {"http": HTTP_PORT, "grpc": GRPC_PORT, "metrics": METRICS_PORT}
    got = {p.get("name"): p.get("port") for p in (main or {}).get("spec", {}).get("ports", [])}
    R.check(f"Service {dep['metadata']['name']}: ports http {HTTP_PORT}, grpc {GRPC_PORT}, metrics {METRICS_PORT}",
            got == want, f"{got}")

    hpa = one(docs, "HorizontalPodAutoscaler", K8S_FILE)
    if R.check("HorizontalPodAutoscaler: one, autoscaling/v2",
               hpa is not None and hpa.get("apiVersion") == "autoscaling/v2"):
        ref, hs = hpa["spec"].get("scaleTargetRef", {}), hpa["spec"]
        R.check("HorizontalPodAutoscaler: targets the Deployment", ref.get("kind") == "Deployment" and
                ref.get("name") == dep["metadata"]["name"] and ref.get("apiVersion") == "apps/v1", f"{ref}")
        R.check("HorizontalPodAutoscaler: 1 <= minReplicas <= maxReplicas",
                1 <= hs.get("minReplicas", 1) <= hs.get("maxReplicas", 0))
        R.check("HorizontalPodAutoscaler: scales on CPU utilization", any(
            m.get("type") == "Resource" and m.get("resource", {}).get("name") == "cpu" and
            m["resource"].get("target", {}).get("type") == "Utilization" for m in hs.get("metrics", [])))
    pdb = one(docs, "PodDisruptionBudget", K8S_FILE)
    if pdb is not None:
        R.check("PodDisruptionBudget: selects the Deployment's pods",
                selects(pdb["spec"].get("selector", {}).get("matchLabels"), labels))


# ------------------------------------------------------------------ KServe --
def check_kserve(docs):
    rt = one(docs, "ServingRuntime", RUNTIME_FILE) or one(docs, "ClusterServingRuntime", RUNTIME_FILE)
    if not R.check("ServingRuntime: one in serving-runtime.yaml, serving.kserve.io/v1alpha1",
                   rt is not None and rt.get("apiVersion") == "serving.kserve.io/v1alpha1"):
        return None
    spec = rt["spec"]
    R.check("ServingRuntime: named xonnx", rt["metadata"]["name"] == "xonnx")
    R.check("ServingRuntime: supports onnx version \"1\" with autoSelect", any(
        f.get("name") == "onnx" and f.get("version") == "1" and f.get("autoSelect") is True
        for f in spec.get("supportedModelFormats", [])))
    R.check("ServingRuntime: protocolVersions v2 and grpc-v2",
            {"v2", "grpc-v2"} <= set(spec.get("protocolVersions", [])))
    c = next((x for x in spec.get("containers", []) if x.get("name") == "kserve-container"), None)
    if not R.check("ServingRuntime: has the kserve-container", c is not None):
        return None
    args = c.get("args", [])
    flags = parse_args(args)
    R.check("ServingRuntime: args run `xonnx serve` on /mnt/models",
            args[:1] == ["serve"] and (flags.get("--model-repository") or flags.get("--model-store")) == "/mnt/models",
            f"args={args}")
    R.check("ServingRuntime: HTTP on 8080, KServe's default port", flag_int(flags, "--http-port", HTTP_PORT) == 8080)
    ann = spec.get("annotations", {})
    R.check("ServingRuntime: prometheus.kserve.io annotations name the metrics port",
            ann.get("prometheus.kserve.io/port") == str(flag_int(flags, "--metrics-port", METRICS_PORT))
            and ann.get("prometheus.kserve.io/path") == "/metrics", f"{ann}")
    mounts = {m.get("mountPath") for m in c.get("volumeMounts", [])}
    R.check("ServingRuntime: the compile cache dir is on a volume", flags.get("--cache-dir") in mounts)

    isvc = one(docs, "InferenceService", ISVC_FILE)
    if R.check("InferenceService: one in inference-service.yaml, serving.kserve.io/v1beta1",
               isvc is not None and isvc.get("apiVersion") == "serving.kserve.io/v1beta1"):
        model = isvc["spec"].get("predictor", {}).get("model", {})
        R.check("InferenceService: modelFormat onnx on runtime " + rt["metadata"]["name"],
                model.get("modelFormat", {}).get("name") == "onnx" and model.get("runtime") == rt["metadata"]["name"])
        R.check("InferenceService: protocolVersion is one the runtime speaks",
                model.get("protocolVersion") in spec.get("protocolVersions", []), f"{model.get('protocolVersion')}")
        R.check("InferenceService: has a storageUri", bool(model.get("storageUri")))
        # The gRPC port it names (also the commented-out example) is the runtime's.
        grpc = flag_int(flags, "--grpc-port", GRPC_PORT)
        with open(ISVC_FILE) as fh:
            text = fh.read()
        named = [int(n) for n in re.findall(r"name:\s*h2c\s*\n\s*#?\s*containerPort:\s*(\d+)", text)]
        named += [p.get("containerPort") for p in model.get("ports", []) if p.get("name") == "h2c"]
        R.check(f"InferenceService: the h2c port it names is the runtime's --grpc-port {grpc}",
                bool(named) and all(n == grpc for n in named), f"h2c ports {named}")
    return c


# ------------------------------------------------------------ the binary --
def help_flags(binary):
    try:
        out = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    if out.returncode != 0:
        return None, f"exit {out.returncode}: {out.stderr.strip()[:200]}"
    flags = set()
    for line in out.stdout.splitlines():
        m = re.match(r"^\s+((?:-\w,)?--[\w-]+(?:,--[\w-]+)*)", line)
        if m:
            flags.update(f for f in m.group(1).split(",") if f.startswith("--"))
    return flags, ""


def check_flags(binary, containers):
    name = "args are flags `xonnx serve --help` lists"
    if not binary:
        R.skip(name, "no xonnx binary given (usage: check_deploy.py PATH/TO/xonnx); only this check and the "
                     "library check are left out")
        return
    flags, err = help_flags(binary)
    if not R.check(f"`{binary} serve --help` runs and lists flags", bool(flags), err):
        return
    for label, c in containers:
        if c is None:
            continue
        used = [a.split("=", 1)[0] for a in map(str, c.get("args", [])) if a.startswith("--")]
        missing = [u for u in used if u not in flags]
        R.check(f"{label}: {name} ({len(used)} flags)", not missing, f"unknown: {missing}")
        mode = parse_args(c.get("args", [])).get("--model-control-mode")
        if mode is not None:
            R.check(f"{label}: --model-control-mode {mode} is none, poll or explicit",
                    mode in ("none", "poll", "explicit"))


# ------------------------------------------------------------ Dockerfile --
def dockerfile_instructions(text):
    """[(stage_index, INSTRUCTION, args)] with continuations joined and
    comment lines dropped."""
    out, buf, stage = [], "", -1
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        if buf.strip():
            ins, _, args = buf.strip().partition(" ")
            ins = ins.upper()
            if ins == "FROM":
                stage += 1
            out.append((stage, ins, args.strip()))
        buf = ""
    return out


def apt_install_packages(run_args):
    pkgs = []
    for m in re.finditer(r"apt-get\s+install\s+(.*?)(?:&&|;|$)", run_args):
        pkgs += [t for t in m.group(1).split() if not t.startswith("-")]
    return pkgs


def check_dockerfile(binary):
    if not R.check(f"{rel(DOCKERFILE)} exists", os.path.exists(DOCKERFILE)):
        return
    with open(DOCKERFILE) as fh:
        ins = dockerfile_instructions(fh.read())
    argdefaults = dict(re.match(r"([\w]+)=?(.*)", a).groups() for s, i, a in ins if i == "ARG" and s < 0)
    froms = [(s, a) for s, i, a in ins if i == "FROM"]
    R.check(f"Dockerfile: multi-stage ({len(froms)} stages)", len(froms) >= 2)

    def base(a):
        image = a.split()[0]
        return re.sub(r"\$\{?(\w+)\}?", lambda m: argdefaults.get(m.group(1), m.group(0)), image)
    bases = [base(a) for s, a in froms]
    R.check(f"Dockerfile: every stage is Debian 12 ({', '.join(bases)})",
            all(re.match(r"(docker\.io/(library/)?)?debian:(bookworm|12)", b) for b in bases))
    names = [a.split()[2] if len(a.split()) >= 3 and a.split()[1].upper() == "AS" else None for s, a in froms]
    last = len(froms) - 1
    build_runs = " ".join(a for s, i, a in ins if i == "RUN" and s < last)
    R.check("Dockerfile: build stage installs with scripts/install_deps.sh --no-test",
            "scripts/install_deps.sh --no-test" in build_runs)
    R.check("Dockerfile: build stage configures Release without tests and Python",
            all(f in build_runs for f in ("-DCMAKE_BUILD_TYPE=Release", "-DXONNX_BUILD_TESTS=OFF",
                                          "-DXONNX_BUILD_PYTHON=OFF")) and "cmake --install" in build_runs)
    # Package names (curl for the HEALTHCHECK) are not downloads.
    runs = [re.sub(r"apt-get\s+install\s+.*?(?=&&|;|$)", "apt-get install", a) for s, i, a in ins
            if i in ("RUN", "ADD")]
    fetch = [a for a in runs if re.search(r"\b(wget|curl|git\s+clone|pip3?\s+install|npm\s+install)\b|https?://", a)]
    R.check("Dockerfile: nothing is downloaded but apt packages (no curl/wget/git/pip/npm/URLs in RUN or ADD)",
            not fetch, f"{fetch}")

    rt = [(i, a) for s, i, a in ins if s == last]
    pkgs = [p for i, a in rt if i == "RUN" for p in apt_install_packages(a)]
    R.check(f"Dockerfile: runtime stage installs Debian packages ({len(pkgs)})", bool(pkgs))
    R.check("Dockerfile: runtime stage cleans the apt lists",
            any("rm -rf /var/lib/apt/lists" in a for i, a in rt if i == "RUN" and "apt-get" in a))
    earlier = {n for n in names[:-1] if n} | {str(k) for k in range(last)}
    copies = [re.search(r"--from=(\S+)", a) for i, a in rt if i == "COPY" and "/opt/xonnx" in a]
    R.check("Dockerfile: runtime stage copies /opt/xonnx from the build stage",
            any(m and m.group(1) in earlier for m in copies))
    users = [a for i, a in rt if i == "USER"]
    user = users[-1].split(":")[0] if users else "root"
    R.check(f"Dockerfile: runtime stage runs as non-root (USER {users[-1] if users else 'unset'})",
            user not in ("root", "0"))
    exposed = {int(p.split("/")[0]) for i, a in rt if i == "EXPOSE" for p in a.split()}
    R.check("Dockerfile: exposes 8000 8001 8002", {HTTP_PORT, GRPC_PORT, METRICS_PORT} <= exposed, f"{exposed}")
    hc = [a for i, a in rt if i == "HEALTHCHECK"]
    R.check("Dockerfile: HEALTHCHECK GETs /v2/health/ready on 8000",
            bool(hc) and READY_PATH in hc[-1] and f":{HTTP_PORT}" in hc[-1], f"{hc}")
    ep = " ".join(a for i, a in rt if i in ("ENTRYPOINT", "CMD"))
    R.check("Dockerfile: starts `xonnx serve`", "xonnx" in ep and '"serve"' in ep, ep)

    if shutil.which("apt-cache"):
        unknown = [p for p in pkgs if subprocess.run(["apt-cache", "show", "--no-all-versions", p],
                                                     capture_output=True).returncode != 0]
        R.check("Dockerfile: apt-cache knows every runtime package", not unknown, f"unknown: {unknown}")
    else:
        R.skip("Dockerfile: apt-cache knows every runtime package", "no apt-cache here")
    check_libraries(binary, pkgs)

    if R.check(f"{rel(DOCKERIGNORE)} exists at the build context's root", os.path.exists(DOCKERIGNORE)):
        with open(DOCKERIGNORE) as fh:
            lines = {l.strip() for l in fh if l.strip() and not l.startswith("#")}
        want = {".git", "bench/node_modules"}
        R.check(".dockerignore leaves out .git, build trees and bench/node_modules",
                want <= lines and any(l.startswith("build") for l in lines), f"{sorted(lines)}")


def check_libraries(binary, pkgs):
    name = "Dockerfile: runtime packages provide every library xonnx, its CPU plugin and its SentencePiece shim load"
    if not binary:
        R.skip(name, "no xonnx binary given")
        return
    if not (shutil.which("ldd") and shutil.which("dpkg") and shutil.which("apt-cache")):
        R.skip(name, "needs ldd, dpkg and apt-cache (Debian)")
        return
    bdir = os.path.dirname(os.path.abspath(binary))
    # Next to the program (a build tree) or under <prefix>/lib/xonnx (an install).
    candidates = (os.path.join(bdir, "libxonnx_pjrt_cpu.so"),
                  os.path.join(bdir, "..", "lib", "xonnx", "libxonnx_pjrt_cpu.so"))
    plugin = next((p for p in candidates if os.path.exists(p)), None)
    objs = [binary] + ([plugin] if plugin else [])
    # The SentencePiece shim, where the build has one, beside the plugin.
    shim = plugin and os.path.join(os.path.dirname(plugin), "libxonnx_sentencepiece.so")
    if shim and os.path.exists(shim):
        objs.append(shim)
    libs = set()
    for o in objs:
        out = subprocess.run(["ldd", o], capture_output=True, text=True)
        for line in out.stdout.splitlines():
            m = re.search(r"=>\s*(\S+)\s*\(", line)
            if "not found" in line:
                R.check(name, False, f"{o}: {line.strip()}")
                return
            if m:
                libs.add(m.group(1))
    own_root = os.path.dirname(bdir)
    needed, foreign = set(), []
    for lib in sorted(libs):
        if os.path.realpath(lib).startswith(own_root + os.sep):
            continue  # libxonnx.so: part of the install
        owner = None
        for p in (lib, os.path.realpath(lib)):
            r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
            if r.returncode == 0:
                owner = r.stdout.split(":")[0].strip()
                break
        if owner is None:
            foreign.append(lib)
        else:
            needed.add(owner)
    closure = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests",
                              "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"] + pkgs,
                             capture_output=True, text=True).stdout
    have = {l.strip() for l in closure.splitlines() if l and not l.startswith(" ")}
    missing = sorted(needed - have)
    R.check(f"{name} ({len(needed)} packages{', plugin ' + os.path.basename(plugin) if plugin else ''})",
            not missing and not foreign, f"not installed: {missing}; not from a Debian package: {foreign}")


# ---------------------------------------------------------------- kubectl --
NO_SERVER = re.compile(r"connection refused|couldn't get current server API group list|no such host|"
                       r"i/o timeout|the server could not find|Unable to connect to the server|"
                       r"no configuration has been provided", re.I)


def check_kubectl(docs):
    kubectl = shutil.which("kubectl")
    if not kubectl:
        R.skip("kubectl checks", "kubectl is not on PATH")
        return
    v = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True, timeout=60)
    R.check(f"kubectl version --client ({v.stdout.splitlines()[0] if v.stdout else v.stderr.strip()})",
            v.returncode == 0)
    files = sorted({f for f, i, d in docs})
    for f in files:
        want = []
        for ff, i, d in docs:
            if ff == f:
                group = d["apiVersion"].split("/")[0] if "/" in d["apiVersion"] else ""
                want.append(f"{d['kind'].lower()}{'.' + group if group else ''}/{d['metadata']['name']}")
        r = subprocess.run([kubectl, "label", "--local", "--dry-run=client", "-o", "name", "-f", f,
                            "xonnx.dev/check=1"], capture_output=True, text=True, timeout=60)
        got = r.stdout.split()
        R.check(f"kubectl label --local --dry-run=client -f {rel(f)}: decodes {len(got)} objects",
                r.returncode == 0 and got == want, (r.stderr.strip() or f"got {got}, want {want}")[:300])
    # apply --dry-run=client needs an API server for discovery even with
    # --validate=false; run it only when one answers.
    r = subprocess.run([kubectl, "apply", "--dry-run=client", "--validate=false", "--request-timeout=10s",
                        "-f", files[0]], capture_output=True, text=True, timeout=120)
    if r.returncode != 0 and NO_SERVER.search(r.stderr):
        R.skip("kubectl apply --dry-run=client --validate=false",
               "no API server answers (kubectl needs one for discovery even for a client dry run): "
               + r.stderr.strip().splitlines()[-1][:160])
        return
    for f in files:
        r = subprocess.run([kubectl, "apply", "--dry-run=client", "--validate=false", "--request-timeout=10s",
                            "-f", f], capture_output=True, text=True, timeout=120)
        if r.returncode != 0 and "no matches for kind" in r.stderr:
            R.skip(f"kubectl apply --dry-run=client -f {rel(f)}", "the cluster lacks these CRDs (KServe?)")
            continue
        R.check(f"kubectl apply --dry-run=client --validate=false -f {rel(f)}", r.returncode == 0,
                r.stderr.strip()[:300])


def guarded(name, fn, *args):
    """fn(*args); a file missing a field the checks expect (KeyError and
    the like) fails that group of checks instead of stopping the script."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 -- reported as a failed check
        R.check(f"{name} ran to the end", False, f"{type(e).__name__}: {e}")
        return None


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else None
    if binary and not os.path.exists(binary):
        print(f"check_deploy: {binary}: no such file", file=sys.stderr)
        return 2
    docs = guarded("the YAML files load", load_all) or []
    guarded("field checks", check_fields, docs)
    dep, c = guarded("Deployment checks", check_deployment, docs) or (None, None)
    if dep is not None:
        guarded("Service, HPA and PDB checks", check_services, docs, dep, c)
    kc = guarded("KServe checks", check_kserve, docs)
    guarded("flag checks", check_flags, binary, [("Deployment", c), ("ServingRuntime", kc)])
    guarded("Dockerfile checks", check_dockerfile, binary)
    guarded("kubectl checks", check_kubectl, docs)
    if R.skipped:
        print(f"{R.skipped} skipped")
    print(f"{R.passed} passed, {R.failed} failed")
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
