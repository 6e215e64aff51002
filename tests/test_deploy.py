"""deploy/ names what the code reads: the settings, the commands and options, the Chroma server's
version. (The compose file and the images are not run here: no Docker daemon; the systemd units and
the Caddyfile were run by hand, see the README.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import chromadb
import yaml
from typer.testing import CliRunner

from interviewer.faces.cli import app
from interviewer.settings import Settings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
runner = CliRunner()


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


def test_the_compose_file_runs_two_apps_on_one_postgresql_and_one_chroma() -> None:
    services = compose()["services"]
    apps = [name for name, service in services.items() if service.get("image") == "interviewer:latest"]
    assert apps == ["app1", "app2"]
    for name in apps:
        environment = services[name]["environment"]
        assert (
            environment["INTERVIEWER_DATABASE_URL"].startswith("postgresql://")
            and "@postgres:5432/" in environment["INTERVIEWER_DATABASE_URL"]
        )
        assert environment["INTERVIEWER_CHROMA_URL"] == "http://chroma:8000"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["chroma"]["image"] == f"chromadb/chroma:{chromadb.__version__}", "the server's version follows the client's"
    assert {"80:80", "443:443"} <= set(services["caddy"]["ports"]), "only the proxy is published"
    assert all("ports" not in services[name] for name in (*apps, "postgres", "chroma"))


def test_the_settings_deploy_names_are_the_ones_the_app_reads(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("INTERVIEWER_DATABASE_URL", "postgresql://interviewer:pw@postgres:5432/interviewer")
    monkeypatch.setenv("INTERVIEWER_CHROMA_URL", "http://chroma:8000")
    settings = Settings()
    assert settings.database_url == "postgresql://interviewer:pw@postgres:5432/interviewer"
    assert settings.index.chroma_url == "http://chroma:8000"
    named = set(re.findall(r"^(\w+)=", (DEPLOY / "systemd" / "interviewer.env").read_text(encoding="utf-8"), re.M))
    assert {"INTERVIEWER_DATABASE_URL", "INTERVIEWER_CHROMA_URL"} <= named


def test_every_command_deploy_runs_exists_with_its_options() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    command = re.search(r"^CMD (\[.*\])$", dockerfile, re.M)
    assert command is not None
    commands = [yaml.safe_load(command.group(1))]
    for unit in (DEPLOY / "systemd").glob("*.service"):
        for line in unit.read_text(encoding="utf-8").splitlines():
            if line.startswith("ExecStart="):
                words = shlex.split(line.removeprefix("ExecStart="))
                commands.append([Path(words[0]).name, *words[1:]])
    names = [c[0] for c in commands]
    assert names.count("interviewer") == 2 and "chroma" in names
    for words in commands:
        if words[0] == "interviewer":
            options = {w for w in words[2:] if w.startswith("--")}
            shown = runner.invoke(app, [words[1], "--help"], terminal_width=200)
            assert shown.exit_code == 0 and all(option in shown.output for option in options), (words, shown.output)


def test_the_proxy_keeps_a_browser_on_one_process_and_passes_streams_on() -> None:
    caddyfile = (DEPLOY / "Caddyfile").read_text(encoding="utf-8")
    assert "lb_policy cookie" in caddyfile and "flush_interval -1" in caddyfile
    assert "{$UPSTREAMS:app1:7860 app2:7860}" in caddyfile  # compose's service names by default
