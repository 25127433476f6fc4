# claims table and report (issue 5)


def claims_targets():
    return []
