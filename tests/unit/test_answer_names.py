"""Every question is a function of tokenomy.answers and of tokenomy, even after the answer modules are imported:
a module named like its function would shadow it on the package (``import tokenomy.answers.serve`` sets
``tokenomy.answers.serve`` to the module), so no answer module may share a question's name."""

import importlib
import pkgutil

import tokenomy
import tokenomy.answers as answers


def test_no_answer_module_is_named_like_a_question():
    modules = {m.name for m in pkgutil.iter_modules(answers.__path__)}
    questions = set(answers._WHERE)
    assert not modules & questions, modules & questions


def test_questions_stay_functions_after_every_answer_module_is_imported():
    for m in pkgutil.iter_modules(answers.__path__):
        importlib.import_module(f"tokenomy.answers.{m.name}")
    for q in answers._WHERE:
        assert callable(getattr(answers, q)), q
    assert {"serve", "sweep", "plan", "decode"} <= set(tokenomy._NAMES)
    for q in tokenomy._NAMES:  # the names tk exposes
        assert callable(getattr(tokenomy, q)), q
