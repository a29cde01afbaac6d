"""Options of the Python tests: the built xonnx command (for the C++
results), the ONNX node tests' folder and the example model."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--xonnx-cli", required=True, help="the built xonnx command")
    parser.addoption("--onnx-tests", required=True, help="ONNX's node tests (onnx/backend/test/data/node)")
    parser.addoption("--example", required=True, help="examples/tiny_cnn.onnx")


@pytest.fixture(scope="session")
def xonnx_cli(request):
    return request.config.getoption("--xonnx-cli")


@pytest.fixture(scope="session")
def onnx_tests(request):
    return request.config.getoption("--onnx-tests")


@pytest.fixture(scope="session")
def example(request):
    return request.config.getoption("--example")
