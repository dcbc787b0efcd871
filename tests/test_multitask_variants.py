"""Task variant families: real parameter changes, stable ids and names, clear errors on bad input."""

import numpy as np
import pytest

from sb3_complementary.multitask import ParamSpec, TaskFamily, get_family, list_families, register_family


def rollout(env, actions, seed):
    """Observations and rewards of a fixed action sequence (stops at the episode end)."""
    obs, _ = env.reset(seed=seed)
    trajectory = [np.asarray(obs, dtype=np.float64)]
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        trajectory.append(np.append(np.asarray(obs, dtype=np.float64), reward))
        if terminated or truncated:
            break
    env.close()
    return trajectory


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_built_in_families_have_fixed_ids_and_names():
    assert {"cartpole", "lunarlander", "mountaincar"} <= set(list_families())
    assert get_family("cartpole").names == ["default", "short_pole", "heavy_pole", "high_gravity", "weak_force"]
    assert get_family("lunarlander").names == ["default", "low_gravity", "high_gravity", "windy", "stormy"]
    assert get_family("mountaincar").names == ["default", "strong_engine", "weak_engine", "low_gravity", "high_gravity"]
    for name in ("cartpole", "lunarlander", "mountaincar"):
        family = get_family(name)
        assert [v.task_id for v in family.variants] == list(range(len(family)))
        assert family.variant(2) is family.variant(family.names[2])


@pytest.mark.parametrize(
    ("family", "actions"),
    [
        ("cartpole", [0, 1, 1, 0, 0, 0, 1, 0] * 3),
        ("mountaincar", [2] * 30 + [0] * 30),
        ("lunarlander", [2, 0, 1, 3] * 15),
    ],
)
def test_variants_change_the_dynamics(family, actions):
    """A fixed action sequence from the same seed: one trajectory per variant, all different; reproducible."""
    fam = get_family(family)
    trajectories = [rollout(fam.make(v.task_id), actions, seed=3) for v in fam.variants]
    for i in range(len(trajectories)):
        for j in range(i + 1, len(trajectories)):
            assert not same(trajectories[i], trajectories[j]), f"{fam.names[i]} and {fam.names[j]} behave alike"
    for v in fam.variants:
        assert same(rollout(fam.make(v.name), actions, seed=3), trajectories[v.task_id]), v.name


def test_parameters_reach_the_simulation():
    cartpole = get_family("cartpole").make("short_pole").unwrapped
    assert cartpole.length == 0.25
    assert cartpole.polemass_length == pytest.approx(0.25 * 0.1)  # derived constant recomputed
    heavy = get_family("cartpole").make("heavy_pole").unwrapped
    assert heavy.total_mass == pytest.approx(1.5)
    stormy = get_family("lunarlander").make("stormy").unwrapped
    assert (stormy.gravity, stormy.enable_wind, stormy.wind_power, stormy.turbulence_power) == (-10.0, True, 20.0, 2.0)
    weak = get_family("mountaincar").make("weak_engine").unwrapped
    assert (weak.force, weak.gravity) == (0.0008, 0.0025)


def test_unknown_family_and_variant_list_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown task family 'cartpol'.*'cartpole'.*'lunarlander'.*'mountaincar'"):
        get_family("cartpol")
    with pytest.raises(ValueError, match=r"unknown variant 'tall_pole'.*0=default.*1=short_pole.*4=weak_force"):
        get_family("cartpole").variant("tall_pole")
    with pytest.raises(ValueError, match=r"unknown variant 7 .*0=default"):
        get_family("mountaincar").make(7)


@pytest.mark.usefixtures("scratch_registry")
@pytest.mark.parametrize(
    ("base", "params", "parameter", "allowed"),
    [
        ("lunarlander", {"gravity": -12.0}, "gravity", "(-12.0, 0.0)"),
        ("lunarlander", {"gravity": 1.0}, "gravity", "(-12.0, 0.0)"),
        ("lunarlander", {"wind_power": 25.0}, "wind_power", "[0.0, 20.0]"),
        ("lunarlander", {"turbulence_power": -0.5}, "turbulence_power", "[0.0, 2.0]"),
        ("cartpole", {"length": 0.0}, "length", "(0.0, inf)"),
        ("cartpole", {"masspole": -1.0}, "masspole", "(0.0, inf)"),
        ("cartpole", {"force_mag": float("nan")}, "force_mag", "(0.0, inf)"),
        ("mountaincar", {"gravity": -0.001}, "gravity", "(0.0, inf)"),
    ],
)
def test_out_of_range_parameter_is_a_value_error_naming_it(base, params, parameter, allowed):
    with pytest.raises(ValueError, match="parameter " + parameter) as error:
        register_family("bad", {"v": params}, base=base)
    assert allowed in str(error.value)
    assert "bad" not in list_families()


@pytest.mark.usefixtures("scratch_registry")
def test_bad_registrations():
    with pytest.raises(ValueError, match=r"unknown parameter 'pole_colour'.*'force_mag'.*'length'"):
        register_family("bad", {"v": {"pole_colour": 1.0}}, base="cartpole")
    with pytest.raises(ValueError, match="enable_wind must be a bool"):
        register_family("bad", {"v": {"enable_wind": 1}}, base="lunarlander")
    with pytest.raises(ValueError, match="already registered"):
        register_family("cartpole", {"v": {}}, base="cartpole")
    with pytest.raises(ValueError, match="either base"):
        register_family("bad", {"v": {}})
    with pytest.raises(ValueError, match="not a registered gymnasium"):
        register_family("bad", {"v": {}}, env_id="NoSuchEnv-v9", params={})
    with pytest.raises(ValueError, match="at least one variant"):
        register_family("bad", {}, base="cartpole")


@pytest.mark.usefixtures("scratch_registry")
def test_register_family_for_users():
    planets = {"moon": {"gravity": 1.62}, "jupiter": {"gravity": 24.8}}
    family = register_family("cartpole_gravity", planets, base="cartpole")
    assert get_family("cartpole_gravity") is family
    assert family.names == ["moon", "jupiter"] and family.variant("jupiter").task_id == 1
    assert family.make("moon").unwrapped.gravity == 1.62
    own = register_family(
        "pendulum_mass",
        {"light": {"m": 0.5}, "heavy": {"m": 2.0}},
        env_id="Pendulum-v1",
        params={"m": ParamSpec(low=0.0, low_open=True)},
    )
    assert isinstance(own, TaskFamily) and own.make("heavy").unwrapped.m == 2.0
