"""Options of the Python tests: the built xonnx command (for the C++
results), the ONNX node tests' folder and the example model."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--xonnx-cli", required=True, help="the built xonnx command")
    parser.addoption("--onnx-tests", required=True, help="ONNX's node tests (onnx/backend/test/data/node)")
    parser.addoption("--example", required=True, help="examples/tiny_cnn.onnx")
    parser.addoption("--installed-package", default="",
                     help="the folder the xonnx package must be imported from (an installed prefix's)")


def pytest_configure(config):
    # Testing an install: the package under test must be that one, not a
    # build tree's that happens to be on the path.
    where = config.getoption("--installed-package")
    if where:
        import os
        import xonnx
        if not os.path.realpath(xonnx.__file__).startswith(os.path.realpath(where)):
            raise pytest.UsageError(f"xonnx was imported from {xonnx.__file__}, not from {where}")


@pytest.fixture(scope="session")
def xonnx_cli(request):
    return request.config.getoption("--xonnx-cli")


@pytest.fixture(scope="session")
def onnx_tests(request):
    return request.config.getoption("--onnx-tests")


@pytest.fixture(scope="session")
def example(request):
    return request.config.getoption("--example")
