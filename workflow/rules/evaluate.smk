# owned by the data/extrinsic work (issue 4)
