"""exits.exit_for_exception: each kind of failure -> its exit status and a one-line reason."""

import errno

from harness.exits import Exit, exit_for_exception
from harness.spec import SpecError

JAVA_ERROR = """An error occurred while calling o106.getResult.
: org.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:56)
Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task 2 in stage 1.0 failed 1 times, \
most recent failure: Lost task 2.0 in stage 1.0 (TID 4) (localhost executor driver): java.lang.OutOfMemoryError: \
Java heap space
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)
"""


def java_error(text: str) -> Exception:
    error = type("Py4JJavaError", (Exception,), {"__module__": "py4j.protocol"})
    return error(text)


def test_a_spark_error_names_its_root_cause_not_py4js_call():
    code, reason = exit_for_exception(java_error(JAVA_ERROR))
    assert code == Exit.INFRA
    assert reason.startswith("Spark failed: org.apache.spark.SparkException: Job aborted due to stage failure")
    assert "OutOfMemoryError" in reason and "o106" not in reason and "\n" not in reason


def test_a_spark_error_without_a_cause_keeps_the_exception_line():
    code, reason = exit_for_exception(java_error("An error occurred while calling o9.load.\n: java.io.IOException: gone\n"))
    assert (code, reason) == (Exit.INFRA, "Spark failed: java.io.IOException: gone")


def test_usage_infrastructure_and_unexpected_failures():
    assert exit_for_exception(SpecError("x.yaml: workload.rate: must be > 0"))[0] == Exit.USAGE
    assert exit_for_exception(OSError(errno.ENOSPC, "full", "/runs"))[1] == "no space left on the device holding /runs"
    code, reason = exit_for_exception(KeyError("k"))
    assert code == Exit.INFRA and reason == "the harness failed unexpectedly: KeyError: 'k'"


PYTHON_WORKER_ERROR = """An exception was thrown from the Python worker. Please see the stack trace below.:
Traceback (most recent call last):
  File "/x/pyspark/worker.py", line 1, in main
    process()
  File "/x/harness/engine/source.py", line 9, in read
    raise KafkaException(err)
cimpl.KafkaException: KafkaError{code=_TRANSPORT,val=-195,str="broker down"}

JVM stacktrace:
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1)
"""


def test_a_python_worker_error_names_the_exception_that_ended_its_traceback():
    error = type("PythonException", (Exception,), {"__module__": "pyspark.errors.exceptions.captured"})
    code, reason = exit_for_exception(error(PYTHON_WORKER_ERROR))
    assert code == Exit.INFRA
    assert reason == ('Spark failed: a Python worker raised cimpl.KafkaException: '
                      'KafkaError{code=_TRANSPORT,val=-195,str="broker down"}'), reason


def test_a_python_worker_error_inside_a_java_error_is_named_too():
    text = ("An error occurred while calling o50.collectToPython.\n: org.apache.spark.SparkException: Job aborted\n"
            "Caused by: org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "/x/source.py", line 3, in read\n    boom()\nValueError: no end offsets\n\n'
            "\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:1)\n")
    assert exit_for_exception(java_error(text))[1] == "Spark failed: a Python worker raised ValueError: no end offsets"
