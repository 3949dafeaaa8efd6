import os

rank = int(os.environ["RANK"])
local_rank = int(os.environ.get("LOCAL_RANK", 0))
world_size = int(os.getenv("WORLD_SIZE", "1"))
