"""xonnx's PEP 517 build backend: `pip install .` and `python3 -m build`.

It needs nothing from the network: no build requirements (pyproject.toml
lists none), only CMake, a C++ compiler and the Debian packages
scripts/install_deps.sh installs. build_wheel configures and builds the
project with CMake (Release, without tests), installs it into a staging
prefix, and packs that prefix as a wheel: the Python package goes where
packages go, and the rest of the prefix (the library, its CPU plugin, the
`xonnx` command, headers, CMake and pkg-config files) into the wheel's data,
which pip installs under the environment's prefix (a venv's bin/, lib/,
include/). The package finds the library and the library its plugin
relative to themselves, as in any installed prefix.

Config settings (pip: --config-settings KEY=VALUE; build: -C KEY=VALUE):
  build-dir  the CMake build folder (default <source>/build-wheel; an
             existing build folder is reused as it is configured)
  jobs       parallel compile jobs (default: the CPU count)
"""

import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "xonnx"
SUMMARY = "Run ONNX models on any XLA device through PjRT plugins"


def _version():
    with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
        m = re.search(r"project\(xonnx VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("CMakeLists.txt: no project(xonnx VERSION ...)")
    return m.group(1)


def _setting(config_settings, key, default):
    value = (config_settings or {}).get(key)
    if isinstance(value, list):
        value = value[-1]
    return value if value else default


def _run(cmd):
    print("xonnx_build:", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\nSummary: {SUMMARY}\n"
            "License: Apache-2.0\nRequires-Python: >=3.9\nRequires-Dist: numpy\n")


def _tags():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    abi = impl + getattr(sys, "abiflags", "")
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return impl, abi, platform


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _stage(config_settings, prefix):
    """Builds with CMake and installs into `prefix`."""
    build = os.path.abspath(_setting(config_settings, "build-dir", os.path.join(SOURCE, "build-wheel")))
    jobs = str(_setting(config_settings, "jobs", os.cpu_count() or 2))
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        _run(["cmake", "-S", SOURCE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DXONNX_BUILD_TESTS=OFF",
              "-DXONNX_BUILD_PYTHON=ON", "-DCMAKE_INSTALL_LIBDIR=lib"])
    _run(["cmake", "--build", build, "-j", jobs])
    _run(["cmake", "--install", build, "--prefix", prefix])


def _package_dir(prefix):
    """The installed package's folder under `prefix`: it must be
    lib/pythonX.Y/dist-packages/xonnx, with the library in lib/, the layout
    of every environment pip installs into (the package finds the library
    at ../../.. from itself)."""
    for root, dirs, files in os.walk(prefix):
        if os.path.basename(root) == NAME and any(f.startswith("_xonnx") and f.endswith(".so") for f in files):
            rel = os.path.relpath(root, prefix).split(os.sep)
            if len(rel) != 4 or rel[0] != "lib" or not rel[1].startswith("python") or not glob_lib(prefix):
                raise RuntimeError(f"the build folder installs the package at {'/'.join(rel)} and its library "
                                   "elsewhere than lib/: configure it with -DCMAKE_INSTALL_LIBDIR=lib, or let "
                                   "the backend make its own (no build-dir setting)")
            return root
    raise RuntimeError(f"the install into {prefix} holds no Python package (is XONNX_BUILD_PYTHON on?)")


def glob_lib(prefix):
    return any(f.startswith("libxonnx.so") for f in os.listdir(os.path.join(prefix, "lib")))


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    impl, abi, platform = _tags()
    wheel_name = f"{NAME}-{version}-{impl}-{abi}-{platform}.whl"
    dist_info = f"{NAME}-{version}.dist-info"
    data = f"{NAME}-{version}.data/data"
    with tempfile.TemporaryDirectory() as prefix:
        _stage(config_settings, prefix)
        package = _package_dir(prefix)
        site = os.path.dirname(package)  # lib/python3.X/dist-packages: the wheel's root
        entries = []  # (arcname, file path)
        for root, dirs, files in os.walk(prefix):
            dirs.sort()
            for f in sorted(files):
                path = os.path.join(root, f)
                if os.path.islink(path) and not os.path.exists(path):
                    continue
                if path.startswith(package + os.sep):
                    arc = os.path.relpath(path, site)
                elif path.startswith(site + os.sep):
                    continue  # nothing else is installed beside the package
                else:
                    arc = f"{data}/{os.path.relpath(path, prefix)}"
                if "__pycache__" in arc:
                    continue
                entries.append((arc.replace(os.sep, "/"), path))
        os.makedirs(wheel_directory, exist_ok=True)
        record = []
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
            for arc, path in entries:
                # Symbolic links (libxonnx.so -> libxonnx.so.0.1...) become
                # copies: wheels hold plain files.
                with open(path, "rb") as f:
                    content = f.read()
                info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                mode = 0o755 if os.access(path, os.X_OK) else 0o644
                info.external_attr = (0o100000 | mode) << 16
                z.writestr(info, content)
                record.append(_record_line(arc, content))
            wheel_meta = (f"Wheel-Version: 1.0\nGenerator: xonnx_build\nRoot-Is-Purelib: false\n"
                          f"Tag: {impl}-{abi}-{platform}\n").encode()
            for arc, content in ((f"{dist_info}/METADATA", _metadata(version).encode()),
                                 (f"{dist_info}/WHEEL", wheel_meta)):
                z.writestr(arc, content)
                record.append(_record_line(arc, content))
            record.append(f"{dist_info}/RECORD,,")
            z.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    """The source tree as tracked by git (or, without git, every file but
    build folders and caches)."""
    version = _version()
    base = f"{NAME}-{version}"
    try:
        listed = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z"], check=True, capture_output=True).stdout
        files = [f for f in listed.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(SOURCE):
            dirs[:] = [d for d in dirs if not d.startswith(("build", ".git")) and d not in ("node_modules",
                                                                                          "__pycache__")]
            files += [os.path.relpath(os.path.join(root, n), SOURCE) for n in names]
    os.makedirs(sdist_directory, exist_ok=True)
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for f in sorted(files):
            tar.add(os.path.join(SOURCE, f), arcname=f"{base}/{f}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        meta = _metadata(version).encode()
        info.size = len(meta)
        tar.addfile(info, io.BytesIO(meta))
    return name


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = f"{NAME}-{_version()}.dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata(_version()))
    return dist_info

