import argparse
import json
from my_worker.config import MyWorkerConfig
from my_worker.runtime import MyWorkerRuntime

def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--grpc", action="store_true")
    parser.add_argument("--grpc-target", default="127.0.0.1:50055")
    args = parser.parse_args(argv)

    # Load config from JSON file
    with open(args.config) as f:
        config = MyWorkerConfig.from_dict(json.load(f))

    # Run the worker
    runtime = MyWorkerRuntime(config)
    runtime.run()

if __name__ == "__main__":
    main()
