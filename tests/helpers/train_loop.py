"""The correct answer to the code card gradient-accumulation/train-loop, shared by the
checker's tests (tests/checkers/test_checker_train_loop.py) and the sandbox's (tests/sandbox/)."""

REFERENCE = """\
model.train()
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (inputs, labels) in enumerate(dataloader):
        inputs, labels = inputs.to(device), labels.to(device)
        outputs = model(inputs)
        loss = criterion(outputs, labels) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
            optimizer.zero_grad()
"""
