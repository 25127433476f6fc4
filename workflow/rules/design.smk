# owned by the intrinsic-pipeline work (issue 3)
