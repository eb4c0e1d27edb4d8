"""Every hostile checkpoint of tests/hostile_checkpoints.py uploaded on the Training page, in both languages:
each is refused with its one translated sentence, nothing is registered or selected, and the next page
visit works. One session per language walks the whole suite, as one determined visitor would."""
from __future__ import annotations

import pytest

from tests.app.apptest_helpers import clean, open_script, random_model_fixtures
from tests.hostile_checkpoints import good_payload, hostile_checkpoints, saved
from ui import models
from ui.i18n import LANGS, translate

pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol")

checkpoint_dir, random_models = random_model_fixtures(("copy", 1), folder="upload_checkpoints", d_model=16)
UPLOAD_KEY = "training.upload"
SESSION_MODELS_KEY = "_models.session"


@pytest.mark.parametrize("lang", LANGS)
def test_hostile_uploads_are_refused_and_leave_the_session_working(app, lang):
    at = open_script(app, "app_pages/training.py", {"lang": lang})
    for name, hostile in hostile_checkpoints().items():
        at.file_uploader(key=UPLOAD_KEY).set_value((f"{name}.pt", hostile.data, "application/octet-stream"))
        at = clean(at.run())
        expected = translate(f"training.upload.error.{hostile.reason}", lang)
        assert [e.value for e in at.error] == [expected], name
        assert not registered(at), name
        assert at.session_state[models.MODEL_STATE_KEY] == "copy", name
    at = clean(at.switch_page("app_pages/attention.py").run())
    assert at.title[0].value == translate("attention.title", lang)
    assert not at.error


def registered(at) -> list[str]:
    """The names of the models this session has registered."""
    return list(at.session_state[SESSION_MODELS_KEY]) if SESSION_MODELS_KEY in at.session_state else []


def test_the_control_a_good_upload_is_registered_and_selected(app):
    at = open_script(app, "app_pages/training.py", {"lang": "en"})
    at.file_uploader(key=UPLOAD_KEY).set_value(("fine.pt", saved(good_payload()), "application/octet-stream"))
    at = clean(at.run())
    assert not at.error and registered(at) == ["fine"]
    assert at.session_state[models.MODEL_STATE_KEY] == "fine"


@pytest.mark.parametrize("lang", LANGS)
def test_an_uploaded_model_is_labelled_uploaded_not_trained_here(app, lang):
    at = open_script(app, "app_pages/training.py", {"lang": lang})
    at.file_uploader(key=UPLOAD_KEY).set_value(("fine.pt", saved(good_payload()), "application/octet-stream"))
    at = clean(at.run())
    options = at.sidebar.selectbox(key=models.MODEL_STATE_KEY).options
    assert translate("common.model.label_uploaded", lang, name="fine") in options
    assert translate("common.model.label_session", lang, name="fine") not in options


@pytest.mark.parametrize("lang", LANGS)
def test_a_session_keeps_at_most_four_models_and_says_which_it_let_go(app, lang, monkeypatch):
    """One visitor uploading a file under 40 names (#33 item 2): the session keeps the newest four, each upload
    selected, and the page names the one let go, in the visitor's language."""
    uploaded = lambda shown: shown.startswith("copy") and shown != "copy"  # noqa: E731 - labels outside the run
    monkeypatch.setattr(models, "is_session_model", uploaded)
    monkeypatch.setattr(models, "is_uploaded_model", uploaded)
    at = open_script(app, "app_pages/training.py", {"lang": lang})
    data = saved(good_payload())
    for n in range(1, 41):
        at.file_uploader(key=UPLOAD_KEY).set_value((f"copy{n}.pt", data, "application/octet-stream"))
        at = clean(at.run())
        assert at.session_state[models.MODEL_STATE_KEY] == f"copy{n}"
        assert registered(at) == [f"copy{k}" for k in range(max(1, n - 3), n + 1)]
        _, key, args = at.session_state["_training.upload_result"]
        if n <= models.MAX_SESSION_MODELS:
            assert key == "training.upload.done" and "dropped" not in args
        else:
            assert key == "training.upload.done_dropped" and args["dropped"] == f"copy{n - 4}" and args["limit"] == 4
        assert [str(s.value) for s in at.success] == [translate(key, lang, **args)]
    options = [o.split(" ")[0].split("（")[0] for o in at.sidebar.selectbox(key=models.MODEL_STATE_KEY).options]
    assert options == [*models.shipped_models(), "copy37", "copy38", "copy39", "copy40"]
