def wrap_env(env, run_id, settings):
    raise NotImplementedError
