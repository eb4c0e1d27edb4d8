"""Two replicas behind HAProxy with ``deploy/haproxy.cfg``: sessions stay on the replica that holds them.

Two ``streamlit run app.py`` processes and the proxy run on loopback ports (``bench/replicas.py``
starts them, with the proxy's configuration file unchanged, and stops them all at the end of the
module). Forty websocket sessions (``bench.replicas.ProxiedSession``: ``bench/load.py``'s client
with the cookies a browser carries) go through the proxy at once: six upload a checkpoint (an
HTTP PUT beside the websocket), two train a tiny model and use it, the others look at a page and
change a widget. Then every session loses its websocket and reconnects to its old session.

Checked: every response each session got (the page, the health check, both websocket handshakes,
the upload) came from the replica its proxy cookie names; each replica, asked directly, counts as
many connected sessions as there are cookies naming it; every session got its own session back
after reconnecting, and the uploaded and trained models are still in its model list. Two controls
show that these checks can fail: the same upload sent with the other replica's cookie is refused
(that replica does not know the session), and a reconnection with the other replica's cookie gets
a new, empty session. The latencies are printed and written to ``test-artifacts/replicas.json``,
not asserted (``bench/replicas.py`` is the benchmark).

No ``/usr/sbin/haproxy`` (Debian: ``apt-get install haproxy``): skipped, except under ``CI=true``
where that is a failure.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from bench import replicas
from tests.e2e.conftest import ARTIFACTS, in_ci

pytestmark = pytest.mark.slow

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SESSIONS = 40
UPLOADERS = 6
TRAINERS = 2
TRAIN_STEPS = 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two replicas and the proxy on loopback; all three processes are stopped afterwards."""
    if not replicas.HAPROXY.exists():
        message = f"{replicas.HAPROXY} is missing: apt-get install haproxy (or run .ci/run)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    ARTIFACTS.mkdir(exist_ok=True)
    log_dir = ARTIFACTS / "replicas"
    log_dir.mkdir(exist_ok=True)
    stats = tmp_path_factory.mktemp("haproxy") / "stats.sock"
    with replicas.replica_cluster(2, env={"TP_TRAINING_DEBUG": "1", "TP_I18N_STRICT": "1"}, log_dir=log_dir,
                                  stats_socket=stats, new_session=False) as running:
        yield running
    for proc in (running.proxy, *running.processes.values()):
        assert proc.poll() is not None, f"process {proc.pid} is still running"


def test_compose_and_proxy_configuration_agree():
    """Every replica the compose file gives the proxy is a service built from the repo's Dockerfile
    with the shared cookie secret, and haproxy.cfg has a server line for it."""
    compose = (DEPLOY / "docker-compose.yml").read_text()
    config = (DEPLOY / "haproxy.cfg").read_text()
    wired = dict(re.findall(r"^\s+TP_REPLICA(\d+): \"(\w+):8501\"", compose, re.M))
    assert len(wired) >= 2
    anchor = compose.split("services:")[0]
    assert re.search(r"dockerfile: Dockerfile", anchor) and "context: .." in anchor
    assert "STREAMLIT_SERVER_COOKIE_SECRET: ${TP_COOKIE_SECRET:?" in anchor
    for number, service in wired.items():
        assert re.search(rf"^  {service}: \*replica$", compose, re.M), service
        assert re.search(rf'^\s+server replica{number} "\$\{{TP_REPLICA{number}\}}" cookie replica{number}$',
                         config, re.M), number
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg" in compose


def test_the_proxy_health_checks_each_replica(cluster):
    """HAProxy's own checks (GET /_stcore/health every 3 s; the first within 3 s of its start) pass."""
    deadline = time.monotonic() + 20
    while True:
        rows = {row["svname"]: row for row in cluster.proxy_stats() if row["pxname"] == "replicas"}
        if all(rows[name]["check_status"] != "INI" for name in cluster.urls) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for name in cluster.urls:
        assert rows[name]["status"] == "UP", rows[name]
        assert rows[name]["check_status"] == "L7OK" and rows[name]["check_code"] == "200", rows[name]


def test_forty_sessions_stay_on_their_replica(cluster):
    report = replicas.run_replicas(cluster, sessions=SESSIONS, uploaders=UPLOADERS, trainers=TRAINERS,
                                   train_steps=TRAIN_STEPS, think=(0.3, 1.0), ramp=8.0, timeout=150.0, log=print)
    (ARTIFACTS / "replicas.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print({k: report[k] for k in ("wall_s", "reruns", "p50_ms", "p95_ms", "max_ms", "errors", "sessions_per_replica",
                                  "active_sessions_per_replica", "responses_checked", "routing_violations")})
    print({kind: row for kind, row in report["by_kind"].items()}, report["uploads"])
    assert report["errors"] == 0, report["error_samples"]
    assert report["sessions_without_cookie"] == 0
    # page, health, websocket, websocket again: 4 per session, and each upload's PUT
    assert report["responses_checked"] == 4 * SESSIONS + UPLOADERS
    assert report["routing_violations"] == 0, report["violation_samples"]
    per_replica = report["sessions_per_replica"]
    assert sum(per_replica.values()) == SESSIONS
    assert min(per_replica.values()) >= SESSIONS // 4, per_replica  # leastconn spreads new visitors
    # while all 40 were connected, each replica itself counted the sessions whose cookie names it
    assert report["active_sessions_per_replica"] == per_replica
    assert report["uploads"]["n"] == UPLOADERS and report["uploads"]["statuses"] == [204]
    assert report["training"] == {f"s{i:02d}": {"state": "finished", "step": TRAIN_STEPS} for i in range(TRAINERS)}
    assert report["model_owners"] == UPLOADERS + TRAINERS
    assert report["models_kept_after_rerun"] == UPLOADERS + TRAINERS
    assert report["sessions_reconnected_to_same_session"] == SESSIONS
    assert report["models_kept_after_reconnect"] == UPLOADERS + TRAINERS
    assert report["by_kind"]["reconnect"]["n"] == SESSIONS


def _other(cluster, name: str) -> str:
    return next(other for other in cluster.urls if other != name)


def test_an_upload_sent_to_the_other_replica_is_refused(cluster):
    """The cookie is what routes the PUT: with the other replica's cookie it reaches a server that
    has no such session, and only the right cookie gets the checkpoint in."""
    session = replicas.ProxiedSession(cluster.proxy_url, "control").arrive()
    try:
        session.open("training", "")
        urls = session.file_urls("control.pt")
        data = replicas.small_checkpoint()
        other = _other(cluster, session.cookie)
        wrong = session.put_file(urls.upload_url, "control.pt", data,
                                 cookies={**session.http.cookies.get_dict(), replicas.PROXY_COOKIE: other})
        assert wrong.status_code == 400 and "Invalid session_id" in wrong.text
        assert wrong.headers[replicas.REPLICA_HEADER] == other
        right = session.put_file(urls.upload_url, "control.pt", data)
        assert right.status_code == 204 and right.headers[replicas.REPLICA_HEADER] == session.cookie
    finally:
        session.close()


def test_a_reconnection_to_the_other_replica_loses_the_session(cluster):
    session = replicas.ProxiedSession(cluster.proxy_url, "control").arrive()
    try:
        session.open("training", "")
        session.upload(replicas.UPLOAD_WIDGET, "control.pt", replicas.small_checkpoint())
        assert session.has_model("control")
        first_id = session.session_id
        other = _other(cluster, session.cookie)
        for cookie in session.http.cookies:
            if cookie.name == replicas.PROXY_COOKIE:
                cookie.value = other
        assert session.cookie == other
        session.reconnect()
        session.navigate("training")
        assert session.session_id != first_id
        assert not session.has_model("control")
        assert session.replicas_seen[-1] == ("websocket again", session.cookie)
    finally:
        session.close()


def test_no_live_replica_was_taken_out_by_the_proxy(cluster):
    """Every replica stayed in service through the whole module (forty sessions, training, uploads): the
    proxy's health check waits for a busy replica instead of declaring it down and sending its sessions to
    a replica that does not have them (``deploy/haproxy.cfg``: ``timeout check``, ``fall``)."""
    log = (ARTIFACTS / "replicas" / "haproxy.log").read_text(errors="replace")
    assert " is DOWN" not in log, [line for line in log.splitlines() if " is DOWN" in line]
